//! Integration tests of pto-op live in `tests/`; this library is empty on purpose.
