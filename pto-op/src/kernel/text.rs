//! The text form of a kernel program.
