//! The C++ helper code the generated kernels start with, kept as real headers beside this
//! file (`cpp/*.h`) so that they read and compile as C++: each file's part below its
//! [`KERNEL_SOURCE`] line is pasted into the kernel source; the lines above it (a comment,
//! `#pragma once` and the includes) make the file a header that compiles on its own.

/// The line of a helper header after which its part of the kernel source begins.
const KERNEL_SOURCE: &str = "\n// ---- kernel source ----\n";

/// The helpers every generated kernel starts with: index arithmetic of the IR and the
/// masked tile copies between GM and UB.
pub(super) const HELPERS: &str = kernel_part(include_str!("cpp/kernel_helpers.h"));

/// The cube's copy helpers: GM -> L1 (Nz), L1 -> L0A / L0B (fractals).
pub(super) const CUBE_HELPERS: &str = kernel_part(include_str!("cpp/cube_helpers.h"));

/// The part of `header` after its [`KERNEL_SOURCE`] line; evaluated at compile time, so a
/// header without the line does not build.
const fn kernel_part(header: &'static str) -> &'static str {
    let (bytes, line) = (header.as_bytes(), KERNEL_SOURCE.as_bytes());
    let mut at = 0;
    while at + line.len() <= bytes.len() {
        let mut i = 0;
        while i < line.len() && bytes[at + i] == line[i] {
            i += 1;
        }
        if i == line.len() {
            let (_, part) = bytes.split_at(at + line.len());
            return match core::str::from_utf8(part) {
                Ok(part) => part,
                Err(_) => panic!("a helper header is not UTF-8"),
            };
        }
        at += 1;
    }
    panic!("a helper header has no `// ---- kernel source ----` line")
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::{CUBE_HELPERS, HELPERS};

    #[test]
    fn the_kernel_parts_are_namespaces() {
        for part in [HELPERS, CUBE_HELPERS] {
            assert!(part.starts_with("namespace {\n"), "{part}");
            assert!(part.ends_with("}  // namespace\n\n"), "{part}");
        }
    }

    /// Both headers compile as C++ on their own, against the host implementation of
    /// `kernel_operator.h`, with every template instantiated for a 16- and a 32-bit type.
    #[test]
    fn the_helper_headers_compile_as_cpp() {
        let compiler = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let cpp = dir.join("src/ascendc/lower/cpp");
        let tmp = std::env::temp_dir().join(format!("pto-lower-helpers-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).expect("a temporary directory");
        let source = tmp.join("helpers.cpp");
        std::fs::write(
            &source,
            "#include \"kernel_helpers.h\"\n\
             #include \"cube_helpers.h\"\n\
             #include \"kernel_helpers.h\"\n\
             template void CopyInTile<half>(const LocalTensor<half>&, const GlobalTensor<half>&, \
             const int64_t*, const int64_t*, const int64_t*, int32_t, uint32_t, half);\n\
             template void CopyOutTile<float>(const GlobalTensor<float>&, const int64_t*, \
             const LocalTensor<float>&, const int64_t*, const int64_t*, int32_t, uint32_t);\n\
             template void CopyInTileNz<half>(const LocalTensor<half>&, const GlobalTensor<half>&, \
             const int64_t*, const int64_t*, int64_t, int64_t, half);\n\
             template void CopyInTileZz<float>(const LocalTensor<float>&, \
             const GlobalTensor<float>&, const int64_t*, const int64_t*, int64_t, int64_t, float);\n\
             template void LoadSubTileL0<half>(const LocalTensor<half>&, \
             const LocalTensor<half>&, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t);\n\
             template void LoadSubTileL0BZn<half>(const LocalTensor<half>&, \
             const LocalTensor<half>&, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t);\n\
             template void LoadSubTileL0BZz32<float>(const LocalTensor<float>&, \
             const LocalTensor<float>&, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t);\n\
             template void LoadSubTileL0BNk<float>(const LocalTensor<float>&, \
             const LocalTensor<float>&, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t);\n",
        )
        .expect("writing the test source");
        std::fs::write(
            tmp.join(crate::ascendc::capability::HOST_HEADER),
            crate::ascendc::capability::host_header(crate::ascendc::Soc::Ascend910B),
        )
        .expect("writing the SoC header");
        let output = Command::new(&compiler)
            .args(["-std=c++17", "-fsyntax-only", "-Wall"])
            .args([
                "-DASCENDC_HOST_UB_BYTES=196608",
                "-DASCENDC_HOST_L1_BYTES=524288",
                "-DASCENDC_HOST_L0A_BYTES=65536",
                "-DASCENDC_HOST_L0B_BYTES=65536",
                "-DASCENDC_HOST_L0C_BYTES=131072",
            ])
            .arg(format!("-I{}", dir.join("ascendc/include").display()))
            .arg(format!("-I{}", cpp.display()))
            .arg(format!("-I{}", tmp.display()))
            .arg(&source)
            .output()
            .expect("the C++ compiler runs");
        let _ = std::fs::remove_dir_all(&tmp);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
