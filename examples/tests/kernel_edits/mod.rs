//! Edits of shipped kernels the tests share.

/// The flash attention's query block, 64 rows in the decoder block's kernel, halved to 32:
/// twice the block programs, each on half the rows (the key and value tiles, `%9`, `%10`,
/// `%12` and `%31`, keep their 64 rows).
pub fn flash_block_32(text: &str) -> String {
    let kv_tiles = ["%9:", "%10:", "%12:", "%31:"];
    text.lines()
        .map(|line| {
            let mut line = line
                .replace("grid 1", "grid 2")
                .replace("pid * 64", "pid * 32");
            if !kv_tiles.iter().any(|t| line.trim_start().starts_with(t)) {
                line = line
                    .replace("[64, 64]@", "[32, 64]@")
                    .replace("[64, 1]@", "[32, 1]@");
            }
            line + "\n"
        })
        .collect()
}
