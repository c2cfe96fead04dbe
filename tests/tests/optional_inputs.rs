//! Optional inputs: an op input declared `Option<&Shape>` may be left out of a call. It is
//! absent at trace, marked in the schema and the fingerprint, left out of the ONNX node
//! (trailing, or as an empty name on import), kept absent through the model file, and
//! covered by `#[parity]` cases with and without it.

use pto_backends::compiler::NodeRuns;
use pto_backends::compiler::compile;
use pto_backends::cpu::Cpu;
use pto_onnx::proto::ModelProto;
use pto_onnx::{from_onnx, to_onnx};
use pto_op::prelude::*;
use pto_op::{Model, OpSchema};

use prost::Message;

/// `y = x * scale + bias` over the rows of `x`, `bias` optional (`y = x * scale` without it).
#[custom_op(name = "test_optional.scale_bias")]
pub mod scale_bias {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, scale: &Shape, bias: Option<&Shape>) -> Result<Shape, OpError> {
        x.expect_rank("x", 2)?;
        let cols = Shape::from([x.last()?]);
        scale.expect_eq("scale", &cols)?;
        if let Some(bias) = bias {
            bias.expect_eq("bias", &cols)?;
        }
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, scale: DType, bias: Option<DType>) -> Result<DType, OpError> {
        for (name, dtype) in [("scale", Some(scale)), ("bias", bias)] {
            if let Some(dtype) = dtype
                && dtype != x
            {
                return Err(OpError::input(
                    name,
                    format!("expected dtype {x} (that of x), got {dtype}"),
                ));
            }
        }
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, scale: &Tensor, bias: Option<&Tensor>) -> Result<Tensor, OpError> {
        let mut y = &x.to_f32_array() * &scale.to_f32_array();
        if let Some(bias) = bias {
            y = &y + &bias.to_f32_array();
        }
        Ok(Tensor::from_f32_array(y, x.dtype()))
    }

    #[parity(x = f32[16, 64], scale = f32[64], bias = f32[64])]
    #[parity(x = f32[16, 64], scale = f32[64])]
    #[parity(x = f16[8, 128], scale = f16[128])]
    #[kernel]
    fn kernel(
        k: &mut Kernel,
        x: &Global,
        scale: &Global,
        bias: Option<&Global>,
        y: &Global,
    ) -> Result<(), OpError> {
        let dims = x.shape().dims().to_vec();
        let [rows, cols] = dims.as_slice() else {
            return Err(OpError::input("x", "the kernel takes rank 2"));
        };
        k.grid(1)?;
        let xt = k.load(x, (0, 0), [*rows, *cols])?.cast(DType::F32);
        let s = k.load(scale, [0], [*cols])?.cast(DType::F32);
        let mut t = xt * s;
        if let Some(bias) = bias {
            t = t + k.load(bias, [0], [*cols])?.cast(DType::F32);
        }
        k.store(y, (0, 0), &t.cast(y.dtype()))
    }
}

/// Two optional inputs, to show what a call that leaves out the first but gives the second
/// is told.
#[custom_op(name = "test_optional.two")]
pub mod two {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, a: Option<&Shape>, b: Option<&Shape>) -> Result<Shape, OpError> {
        let _ = (a, b);
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, a: Option<DType>, b: Option<DType>) -> Result<DType, OpError> {
        let _ = (a, b);
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, a: Option<&Tensor>, b: Option<&Tensor>) -> Result<Tensor, OpError> {
        let _ = (a, b);
        Ok(x.clone())
    }
}

fn tensor(dims: [usize; 2], values: Vec<f32>) -> Tensor {
    Tensor::from_vec(dims, values).expect("as many values as the dims hold")
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_f32_array().iter().copied().collect()
}

fn vector(values: Vec<f32>) -> Tensor {
    Tensor::from_vec([values.len()], values).expect("a vector of its values")
}

/// `x [2, 3] -> scale_bias(x, s, b) -> scale_bias(., s)`: the op at both arities in one model.
fn model() -> Model {
    let g = Graph::new();
    let x = g.input("x", Shape::from([2, 3]), DType::F32);
    let s = g
        .weight("s", vector(vec![1.0, 2.0, -1.0]))
        .expect("a new name");
    let b = g
        .weight("b", vector(vec![0.5, 0.0, 10.0]))
        .expect("a new name");
    let with_bias = scale_bias::apply(&x, &s, Some(&b), &scale_bias::Params {})
        .expect("x [2, 3], s [3], b [3] fit the rules");
    let without =
        scale_bias::apply(&with_bias, &s, None, &scale_bias::Params {}).expect("without bias too");
    g.output(&with_bias);
    g.output(&without);
    g.to_model("optional").expect("a model of registered ops")
}

#[test]
fn the_schema_and_fingerprint_mark_the_optional_input() {
    let def = scale_bias::def();
    assert_eq!((def.inputs.len(), def.required_inputs), (3, 2));
    let schema = OpSchema::of(def);
    let optional: Vec<(&str, bool)> = schema
        .inputs
        .iter()
        .map(|i| (i.name.as_str(), i.optional))
        .collect();
    assert_eq!(optional, [("x", false), ("scale", false), ("bias", true)]);
    let json = schema.to_json_pretty();
    assert_eq!(json.matches("\"optional\": true").count(), 1, "{json}");
    assert!(!json.contains("\"optional\": false"), "{json}");
    assert_eq!(
        pto_op::schema::signature_text(def),
        "test_optional.scale_bias(x, scale, bias?) -> (y) params()"
    );
    // A schema read back keeps it; one written before optional inputs existed reads as all
    // required.
    let back: OpSchema = serde_json::from_str(&json).unwrap();
    assert_eq!(back, schema);
    let old: OpSchema =
        serde_json::from_str(&json.replace(",\n      \"optional\": true", "")).unwrap();
    assert!(old.inputs.iter().all(|i| !i.optional));
}

#[test]
fn a_call_may_leave_out_the_optional_input_and_each_arity_computes_its_own_formula() {
    let x = tensor([2, 3], vec![1.0, 2.0, 3.0, -1.0, 0.0, 4.0]);
    let s = vector(vec![1.0, 2.0, -1.0]);
    let b = vector(vec![0.5, 0.0, 10.0]);
    let p = scale_bias::Params {};
    // Hand-computed: x * s = [1, 4, -3, -1, 0, -4]; + b = [1.5, 4, 7, -0.5, 0, 6].
    let with_bias = scale_bias::run(&Cpu, &x, &s, Some(&b), &p).unwrap();
    assert_eq!(values(&with_bias), [1.5, 4.0, 7.0, -0.5, 0.0, 6.0]);
    let without = scale_bias::run(&Cpu, &x, &s, None, &p).unwrap();
    assert_eq!(values(&without), [1.0, 4.0, -3.0, -1.0, 0.0, -4.0]);
    // The optional input's own rules run when it is given.
    let err = scale_bias::run(&Cpu, &x, &s, Some(&vector(vec![0.0; 4])), &p).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `test_optional.scale_bias`: input `bias`: expected shape [3], got [4]"
    );
}

#[test]
fn untyped_calls_take_every_required_input_and_any_leading_optional_ones() {
    let t = vector(vec![1.0]);
    let err = Cpu
        .execute(scale_bias::def(), &[&t], &Attributes::new())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `test_optional.scale_bias`: expected 2 to 3 input(s) (x, scale, bias?), got 1"
    );
    let err = Cpu
        .execute(scale_bias::def(), &[&t, &t, &t, &t], &Attributes::new())
        .unwrap_err();
    assert!(
        err.to_string().contains("expected 2 to 3 input(s)"),
        "{err}"
    );
    // Leaving out `a` but giving `b` cannot be told from leaving out `b`: refused, by name.
    let err = two::run(&Cpu, &t, None, Some(&t), &two::Params {}).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `test_optional.two`: input `a`: optional input left out while `b` after it is \
         given; a call leaves out only a trailing run of optional inputs, so give this one too"
    );
    assert_eq!(
        two::run(&Cpu, &t, Some(&t), None, &two::Params {}).unwrap(),
        t
    );
}

#[test]
fn a_traced_model_runs_both_arities_on_the_simulator_as_on_the_cpu() {
    let model = model();
    let nodes = &model.graph.nodes;
    assert_eq!((nodes[0].inputs.len(), nodes[1].inputs.len()), (3, 2));
    let x = tensor([2, 3], vec![1.0, 2.0, 3.0, -1.0, 0.0, 4.0]);
    let cpu = compile(&model, "cpu")
        .unwrap()
        .run(std::slice::from_ref(&x))
        .unwrap();
    // Hand-computed: with bias as above; then * s = [1.5, 8, -7, -0.5, 0, -6].
    assert_eq!(values(&cpu.outputs[0]), [1.5, 4.0, 7.0, -0.5, 0.0, 6.0]);
    assert_eq!(values(&cpu.outputs[1]), [1.5, 8.0, -7.0, -0.5, 0.0, -6.0]);
    let sim = compile(&model, "sim").unwrap();
    for node in &sim.report().nodes {
        assert!(
            matches!(node.runs, NodeRuns::Kernel { .. }),
            "node {} runs {}",
            node.node,
            node.runs
        );
    }
    assert_eq!(sim.report().kernels_traced, 2);
    let sim = sim.run(&[x]).unwrap();
    assert_eq!(sim.outputs, cpu.outputs);
}

#[test]
fn the_model_file_and_onnx_keep_the_input_absent() {
    let model = model();
    let back = Model::from_bytes(&model.to_bytes().unwrap()).unwrap();
    assert_eq!(back, model.with_traced_kernels());

    let bytes = to_onnx(&model).unwrap();
    let proto = ModelProto::decode(bytes.as_slice()).unwrap();
    let graph = proto.graph.as_ref().unwrap();
    let inputs: Vec<usize> = graph.node.iter().map(|n| n.input.len()).collect();
    assert_eq!(inputs, [3, 2]);
    let imported = from_onnx(&bytes).unwrap();
    assert_eq!(imported, model.with_traced_kernels());

    // An exporter may write the left-out input as an empty name instead.
    let mut edited = proto.clone();
    edited.graph.as_mut().unwrap().node[1]
        .input
        .push(String::new());
    let imported = from_onnx(&edited.encode_to_vec()).unwrap();
    assert_eq!(imported.graph.nodes[1].inputs.len(), 2);

    // A required input given as an empty name is refused, by name.
    let mut edited = proto;
    edited.graph.as_mut().unwrap().node[1].input[1] = String::new();
    edited.graph.as_mut().unwrap().node[1]
        .input
        .push("b".to_owned());
    let err = from_onnx(&edited.encode_to_vec()).unwrap_err().to_string();
    assert!(
        err.contains(
            "input 1 has an empty name (an absent optional input), which `scale_bias` does not \
             take: `test_optional.scale_bias` input `scale` is required"
        ),
        "{err}"
    );
}

/// A package declares every input of its op, and the device kernel takes one address per
/// declared input: a call that leaves out the optional input is refused by name when it
/// is packaged, rather than packaged with a kernel of fewer arguments.
#[cfg(feature = "device")]
#[test]
fn packaging_a_call_that_leaves_out_the_optional_input_is_refused_by_name() {
    use pto_backends::ascendc::Soc;
    use pto_backends::ascendc::package::{PackageError, write_package};
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("optional-package");
    let _ = std::fs::remove_dir_all(&dir);
    let err = write_package(&model(), Soc::Ascend910B, &dir).expect_err("left out");
    assert!(
        matches!(&err, PackageError::AbsentOptionalInput { node: 1, input, .. } if input == "bias"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("node #1 (test_optional.scale_bias): leaves out optional input `bias`"),
        "{err}"
    );
    assert!(!dir.exists(), "nothing is written");
}
