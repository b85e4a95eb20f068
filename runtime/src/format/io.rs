//! Bounded readers and writers that the generated code calls.
