//! `Model::load` and `LoadedModel::load` read each weight of a model file straight into its
//! own tensor: the loading thread's live heap peaks near the weights' size, not at twice it
//! (the file's bytes and the tensors copied out of them, as before). Counted with a global
//! allocator that tracks the live bytes of the test's thread while it loads.
//!
//! Both versions of the file: version 1 (static shapes) and version 2 (dims saved
//! symbolic), whose weights are read the same way.
//!
//! On a 541 MB model (the 7B-width MLP block of `examples/examples/big_onnx.rs`, imported
//! with `pto import mlp.onnx -o m.pto`), `/usr/bin/time -v pto inspect m.pto` peaks at
//! 545,200 KB resident, 1.03x its 528,394 KiB of weights (it was 1,073,216 KB, 2.03x).

// A global allocator is an `unsafe impl`; it only forwards to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::PathBuf;

use pto_onnx::LoadedModel;
use pto_op::ops::matmul;
use pto_op::{DType, Graph, Model, Shape, Tensor};

struct Counting;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// Adds `delta` bytes to the thread's live bytes while counting, raising the peak.
fn count(delta: isize) {
    // `try_with`: thread-locals may already be gone while a thread exits.
    let _ = ON.try_with(|on| {
        if on.get() {
            let _ = LIVE.try_with(|live| {
                live.set(live.get() + delta);
                let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
            });
        }
    });
}

fn size(bytes: usize) -> isize {
    isize::try_from(bytes).unwrap_or(isize::MAX)
}

// SAFETY: every call forwards to `System` with the caller's arguments; counting touches
// only `const`-initialized thread-locals, which do not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(size(layout.size()));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-size(layout.size()));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(size(layout.size()));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(size(new_size) - size(layout.size()));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What `f` returns, and the most bytes it held live on this thread at once.
fn peak_bytes<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LIVE.with(|c| c.set(0));
    PEAK.with(|c| c.set(0));
    ON.with(|on| on.set(true));
    let out = f();
    ON.with(|on| on.set(false));
    (out, PEAK.with(Cell::get).max(0).unsigned_abs())
}

/// A copy of the model file `path` cut short by a byte is read whole by `load`, for the
/// error `from_bytes` gives of the same bytes, naming the file.
fn assert_a_cut_file_fails_as_its_bytes(
    path: &std::path::Path,
    from_bytes: impl Fn(&[u8]) -> Option<pto_op::model::ModelFileError>,
    load: impl Fn(&std::path::Path) -> Option<pto_op::model::ModelFileError>,
) {
    let bytes = std::fs::read(path).expect("the saved file");
    let cut = path.with_extension("cut.pto");
    std::fs::write(&cut, &bytes[..bytes.len() - 1]).expect("the cut file written");
    let expected = from_bytes(&bytes[..bytes.len() - 1])
        .expect("an error")
        .to_string();
    let err = load(&cut).expect("an error").to_string();
    assert_eq!(
        err,
        expected.replacen(
            "model file: ",
            &format!("model file `{}`: ", cut.display()),
            1
        )
    );
}

/// Two f32 weights of 8 MiB each: `x[4, 1024] @ w1[1024, 2048] @ w2[2048, 1024]`.
fn two_weights() -> Model {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([4, 1024]), DType::F32);
    let w1 = graph
        .weight("w1", Tensor::random([1024, 2048], DType::F32, 1))
        .expect("a weight");
    let w2 = graph
        .weight("w2", Tensor::random([2048, 1024], DType::F32, 2))
        .expect("a weight");
    let h = matmul::apply(&x, &w1, &matmul::Params {}).expect("x @ w1");
    graph.output(&matmul::apply(&h, &w2, &matmul::Params {}).expect("h @ w2"));
    graph.to_model("two-weights").expect("a model")
}

#[test]
fn loading_a_model_file_holds_its_weights_once() {
    let model = two_weights();
    let weights = model.weight_bytes() as f64;
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("load-memory.pto");
    model.save(&path).unwrap();
    // The model as the file holds it (with its traced kernels), read from its bytes.
    let saved = Model::from_bytes(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(saved.weights, model.weights);

    let (loaded, peak) = peak_bytes(|| Model::load(&path).unwrap());
    assert_eq!(loaded, saved);
    let ratio = peak as f64 / weights;
    println!("Model::load: peak {peak} B for {weights} B of weights ({ratio:.2}x)");
    assert!(
        ratio < 1.25,
        "Model::load peaked at {ratio:.2}x the weights"
    );
    drop(loaded);

    let (loaded, peak) = peak_bytes(|| LoadedModel::load(&path).unwrap());
    assert!(matches!(&loaded, LoadedModel::Static(m) if *m == saved));
    let ratio = peak as f64 / weights;
    println!("LoadedModel::load: peak {peak} B ({ratio:.2}x)");
    assert!(
        ratio < 1.25,
        "LoadedModel::load peaked at {ratio:.2}x the weights"
    );

    assert_a_cut_file_fails_as_its_bytes(
        &path,
        |bytes| Model::from_bytes(bytes).err(),
        |path| Model::load(path).err(),
    );
}

/// A model file of version 2 (its dims saved symbolic) loads as lean as version 1: each
/// weight straight from the file into its tensor, not the whole file read first.
#[test]
fn loading_a_symbolic_model_file_holds_its_weights_once() {
    use prost::Message;
    use pto_onnx::proto::ModelProto;
    // The two-weight model with its batch dim symbolic.
    let mut proto =
        ModelProto::decode(pto_onnx::to_onnx(&two_weights()).unwrap().as_slice()).unwrap();
    let graph = proto.graph.as_mut().unwrap();
    for value in [&mut graph.input[0], &mut graph.output[0]] {
        let dim = &mut value
            .r#type
            .as_mut()
            .unwrap()
            .tensor_type
            .as_mut()
            .unwrap()
            .shape
            .as_mut()
            .unwrap()
            .dim[0];
        dim.dim_value = None;
        dim.dim_param = Some("batch".to_owned());
    }
    let LoadedModel::Symbolic(model) = LoadedModel::from_onnx(&proto.encode_to_vec()).unwrap()
    else {
        panic!("the batch dim is symbolic");
    };
    let weights: usize = model
        .weights
        .values()
        .map(|t| t.numel() * t.dtype().size_bytes())
        .sum();
    let weights = weights as f64;
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("load-memory-symbolic.pto");
    model.save(&path).unwrap();
    let saved = LoadedModel::from_bytes(&std::fs::read(&path).unwrap()).unwrap();

    let (loaded, peak) = peak_bytes(|| LoadedModel::load(&path).unwrap());
    assert_eq!(loaded, saved);
    assert!(matches!(&loaded, LoadedModel::Symbolic(m) if *m == model));
    let ratio = peak as f64 / weights;
    println!(
        "LoadedModel::load (version 2): peak {peak} B for {weights} B of weights ({ratio:.2}x)"
    );
    assert!(
        ratio < 1.25,
        "LoadedModel::load of a version 2 file peaked at {ratio:.2}x the weights"
    );
    drop(loaded);

    // `Model::load` refuses it, naming the dims, without reading it whole either.
    let (err, peak) = peak_bytes(|| Model::load(&path).unwrap_err().to_string());
    assert!(err.contains("symbolic dims (batch)"), "{err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(
        (peak as f64) < 1.25 * weights,
        "Model::load of a version 2 file peaked at {peak} B"
    );

    assert_a_cut_file_fails_as_its_bytes(
        &path,
        |bytes| LoadedModel::from_bytes(bytes).err(),
        |path| LoadedModel::load(path).err(),
    );
}
