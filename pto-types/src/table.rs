//! Plain-text tables, as the command line and the reports print them.

/// The width of a text table's column: its header's or its widest cell's, so that rows
/// stay aligned however long an op's name is.
///
/// ```
/// use pto_types::table::column_width;
/// assert_eq!(column_width("op", ["std.add", "std.matmul"]), 10);
/// assert_eq!(column_width("source", ["a"]), 6);
/// ```
pub fn column_width<'a>(header: &str, cells: impl IntoIterator<Item = &'a str>) -> usize {
    cells
        .into_iter()
        .map(|cell| cell.chars().count())
        .fold(header.chars().count(), usize::max)
}
