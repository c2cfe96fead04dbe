//! The C ABI library of the example ops, `libpto_examples_capi.so`: `include/pto_capi.h` of
//! `pto-capi`, answering for the standard ops and those of `pto-examples` and `pto-team-b`.
//! A package of theirs builds it and links it into op_host (`docs/deploying.md`).

use pto_examples as _;
use pto_team_b as _;
pto_capi::export_c_abi!();
