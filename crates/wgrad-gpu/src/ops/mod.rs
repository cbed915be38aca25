//! GPU ops, one family per file. Each records dispatches; none reads back.

mod binary;
