//! Example operators.
