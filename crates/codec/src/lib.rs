//! Every on-disk byte of a ringlet store (being written).
