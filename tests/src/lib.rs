//! Integration tests of pto-op live in `tests/`; this library holds only [`docs`], the
//! guide's pages as doctests.

pub mod docs {
    //! The guide in `docs/`, one module per page, so that every Rust block of the guide is
    //! a doctest: `cargo test -p pto-tests --doc` fails when the guide drifts from the
    //! code. This crate can see every API the guide uses (pto-op, pto-backends,
    //! pto-examples, and the template operator crate `my-ops`).
    //!
    //! How a page keeps its blocks compiling: lines starting with `# ` are compiled but not
    //! shown (a wrapping op module, `fn main`, a `?`-returning function); a block that runs
    //! a program against the op registry is `rust,standalone_crate`, because the other
    //! blocks, merged into one test binary, each register their own example ops (the
    //! registry refuses two ops of one name); a block that is a binary's `main` is
    //! `rust,no_run`. Blocks that are not Rust are `text`, `sh` or `toml`.

    #[doc = include_str!("../../docs/new-op-crate.md")]
    pub mod new_op_crate {}

    #[doc = include_str!("../../docs/architecture.md")]
    pub mod architecture {}

    #[doc = include_str!("../../docs/writing-an-op.md")]
    pub mod writing_an_op {}

    #[doc = include_str!("../../docs/tile-language.md")]
    pub mod tile_language {}

    #[doc = include_str!("../../docs/std-ops.md")]
    pub mod std_ops {}

    #[doc = include_str!("../../docs/models.md")]
    pub mod models {}

    #[doc = include_str!("../../docs/estimating.md")]
    pub mod estimating {}

    #[doc = include_str!("../../docs/deploying.md")]
    pub mod deploying {}

    #[doc = include_str!("../../docs/fidelity.md")]
    pub mod fidelity {}

    #[doc = include_str!("../../docs/redeploying.md")]
    pub mod redeploying {}

    #[doc = include_str!("../../docs/serving.md")]
    pub mod serving {}
}
