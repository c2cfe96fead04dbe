//! Edits of shipped kernels the tests share.

/// The flash attention's query block, 64 rows in the decoder block's kernel, halved to 32:
/// twice the block programs, each on half the rows. The key and value tiles keep their 64
/// rows: the loads of `@1` (k) and `@2` (v) and every move of them, found by name in the text
/// (the lowering of each SoC numbers its tiles its own way).
pub fn flash_block_32(text: &str) -> String {
    let mut kv_tiles: Vec<String> = Vec::new();
    text.lines()
        .map(|line| {
            let trimmed = line.trim_start();
            let defined = trimmed.split_once(':').map(|(name, _)| name.to_owned());
            let source = trimmed.split_once(" = ").map_or("", |(_, rhs)| rhs);
            let keeps_rows = source.starts_with("load @1[")
                || source.starts_with("load @2[")
                || source
                    .strip_prefix("move ")
                    .is_some_and(|from| kv_tiles.iter().any(|t| t == from.trim()));
            if let (true, Some(name)) = (keeps_rows, defined) {
                kv_tiles.push(name);
            }
            let mut line = line
                .replace("grid 1", "grid 2")
                .replace("pid * 64", "pid * 32");
            if !keeps_rows {
                line = line
                    .replace("[64, 64]@", "[32, 64]@")
                    .replace("[64, 1]@", "[32, 1]@");
            }
            line + "\n"
        })
        .collect()
}
