//! Bindings of symbolic dims: the shape of every input for the sizes an [`ImportOptions`]
//! gives (by input, or by dim name), checked in one place, at import and when a symbolic
//! model is bound; and the messages that say what is unbound and how to bind it.

use std::collections::BTreeMap;

use pto_op::model::{Dim, SymbolicValue};
use pto_op::shape::Shape;

use super::options::ImportOptions;
use crate::error::OnnxError;

/// The shape of every input of `inputs` for the bindings of `options` (input shapes, and
/// dims by name): the one place where bindings are checked, at import and when a symbolic
/// model is bound.
pub(crate) fn bound_shapes(
    inputs: &[SymbolicValue],
    options: &ImportOptions,
) -> Result<BTreeMap<String, Shape>, OnnxError> {
    let value_error = |value: &str, problem: String| OnnxError::Value {
        value: value.to_owned(),
        problem,
    };
    let mut dim_names: Vec<&str> = Vec::new();
    for input in inputs {
        for dim in &input.dims {
            if let Dim::Named(name) = dim
                && !dim_names.contains(&name.as_str())
            {
                dim_names.push(name);
            }
        }
    }
    // Each bound dim: its size, and what bound it (for the message of a conflict).
    let mut sizes: BTreeMap<&str, (usize, String)> = BTreeMap::new();
    let mut bind = |name: &str, size: usize, by: String| -> Result<(), String> {
        match dim_names.iter().find(|n| **n == name) {
            None => Err("is no symbolic dim of the model".to_owned()),
            Some(&name) => match sizes.get(name) {
                Some((bound, first)) if *bound != size => Err(format!(
                    "the symbolic dim `{name}` is {size} by {by}, but {bound} by {first}"
                )),
                Some(_) => Ok(()),
                None => {
                    sizes.insert(name, (size, by));
                    Ok(())
                }
            },
        }
    };
    let mut given: BTreeMap<&str, &Shape> = BTreeMap::new();
    let mut by_dim: Vec<(&str, usize, String)> = Vec::new();
    // A size int64 cannot hold is no ONNX dim (the library's way in; `--shape` refuses it as
    // it parses): said so here, not later as "symbolic or unknown".
    let too_large = |size: usize| size as u64 > pto_op::shape::MAX_DIM;
    for (name, shape) in &options.shapes {
        if let Some((axis, &size)) = shape
            .dims()
            .iter()
            .enumerate()
            .find(|(_, d)| too_large(**d))
        {
            return Err(value_error(
                name,
                format!(
                    "dimension {axis} of the shape given for it, {size}, is more than the {} an \
                     ONNX dim (int64) can be",
                    pto_op::shape::MAX_DIM
                ),
            ));
        }
    }
    for (name, &size) in &options.dims {
        if too_large(size) {
            return Err(value_error(
                name,
                format!(
                    "is bound to {size}, more than the {} an ONNX dim (int64) can be",
                    pto_op::shape::MAX_DIM
                ),
            ));
        }
    }
    for (name, shape) in &options.shapes {
        if let Some(input) = inputs.iter().find(|i| &i.name == name) {
            if input.dims.len() != shape.rank() {
                return Err(value_error(
                    name,
                    format!(
                        "is declared with rank {} ({input}), the shape given for it is {shape} \
                         (rank {})",
                        input.dims.len(),
                        shape.rank()
                    ),
                ));
            }
            for (axis, (dim, &size)) in input.dims.iter().zip(shape.dims()).enumerate() {
                match dim {
                    Dim::Size(declared) if *declared != size => {
                        return Err(value_error(
                            name,
                            format!(
                                "dimension {axis} is declared {declared} ({input}), the shape \
                                 given for it is {shape}"
                            ),
                        ));
                    }
                    Dim::Named(dim) => {
                        bind(
                            dim,
                            size,
                            format!("the shape {shape} given for input `{name}`"),
                        )
                        .map_err(|problem| value_error(name, problem))?;
                    }
                    _ => {}
                }
            }
            given.insert(name, shape);
        } else if dim_names.contains(&name.as_str()) {
            let [size] = shape.dims() else {
                return Err(value_error(
                    name,
                    format!(
                        "is a symbolic dim of the model, not an input: bind it to one size \
                         (`--shape {name}=128`), not to {shape}"
                    ),
                ));
            };
            by_dim.push((name, *size, format!("`--shape {name}={size}`")));
        } else {
            return Err(unknown_name(name, inputs));
        }
    }
    for (name, &size) in &options.dims {
        if given.contains_key(name.as_str()) {
            return Err(value_error(
                name,
                "is an input, not a symbolic dim: bind its shape (`ImportOptions::shape`)"
                    .to_owned(),
            ));
        }
        by_dim.push((
            name,
            size,
            format!("`ImportOptions::dim(\"{name}\", {size})`"),
        ));
    }
    for (name, size, by) in by_dim {
        bind(name, size, by).map_err(|problem| {
            if dim_names.contains(&name) {
                value_error(name, problem)
            } else {
                unknown_name(name, inputs)
            }
        })?;
    }
    let mut shapes = BTreeMap::new();
    let mut unbound: Vec<(&SymbolicValue, Vec<String>)> = Vec::new();
    for input in inputs {
        if let Some(shape) = given.get(input.name.as_str()) {
            shapes.insert(input.name.clone(), (*shape).clone());
            continue;
        }
        let mut dims = Vec::with_capacity(input.dims.len());
        let mut missing = Vec::new();
        for (axis, dim) in input.dims.iter().enumerate() {
            match dim {
                Dim::Size(size) => dims.push(*size),
                Dim::Named(name) => match sizes.get(name.as_str()) {
                    Some((size, _)) => dims.push(*size),
                    None => missing.push(format!("dimension {axis} (`{name}`)")),
                },
                Dim::Unnamed => missing.push(format!("dimension {axis} (unnamed)")),
            }
        }
        if missing.is_empty() {
            shapes.insert(input.name.clone(), Shape::new(dims));
        } else {
            unbound.push((input, missing));
        }
    }
    if let Some((first, missing)) = unbound.first() {
        let unbound_names: Vec<&str> = dim_names
            .iter()
            .copied()
            .filter(|n| !sizes.contains_key(n))
            .collect();
        let mut how = Vec::new();
        if !unbound_names.is_empty() {
            let list: Vec<String> = unbound_names
                .iter()
                .map(|n| format!("{n}=<size>"))
                .collect();
            how.push(format!(
                "bind the dims by name with `--shape {}` on the command line \
                 (`ImportOptions::dim` in the API)",
                list.join(",")
            ));
        }
        how.push(format!(
            "give the input's shape with `{}` (`ImportOptions::shape`)",
            shape_hint(first)
        ));
        let symbolic = |missing: &[String]| match missing {
            [one] => format!("{one} is symbolic and not bound"),
            more => format!("{} are symbolic and not bound", more.join(", ")),
        };
        let mut problem = symbolic(missing);
        for (other, missing) in &unbound[1..] {
            problem.push_str(&format!("; input `{}`: {}", other.name, symbolic(missing)));
        }
        problem.push_str(&format!(": {}", how.join(", or ")));
        return Err(value_error(&first.name, problem));
    }
    Ok(shapes)
}

/// The error of a binding that names neither an input nor a symbolic dim.
fn unknown_name(name: &str, inputs: &[SymbolicValue]) -> OnnxError {
    let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
    OnnxError::Value {
        value: name.to_owned(),
        problem: format!(
            "is bound, but it is neither an input nor a symbolic dim of the model: its inputs \
             are {}; its symbolic dims: {}",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            },
            symbolic_dims_text(inputs)
        ),
    }
}

/// `batch, seq` (and `? of x` for an unnamed dim of input `x`).
pub(crate) fn symbolic_dims_text(inputs: &[SymbolicValue]) -> String {
    let mut names: Vec<String> = Vec::new();
    for input in inputs {
        for (axis, dim) in input.dims.iter().enumerate() {
            let text = match dim {
                Dim::Size(_) => continue,
                Dim::Named(name) => name.clone(),
                Dim::Unnamed => format!("dimension {axis} of `{}` (unnamed)", input.name),
            };
            if !names.contains(&text) {
                names.push(text);
            }
        }
    }
    if names.is_empty() {
        "none, every dim is static".to_owned()
    } else {
        names.join(", ")
    }
}

/// `ImportOptions::shape` on the command line: `--shape x=<batch>x8`.
fn shape_hint(input: &SymbolicValue) -> String {
    let dims: Vec<String> = input
        .dims
        .iter()
        .enumerate()
        .map(|(axis, d)| match d {
            Dim::Size(size) => size.to_string(),
            Dim::Named(name) => format!("<{name}>"),
            Dim::Unnamed => format!("<d{axis}>"),
        })
        .collect();
    format!("--shape {}={}", input.name, dims.join("x"))
}
