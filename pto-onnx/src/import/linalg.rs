//! Linear algebra beyond the table's product of two matrices: MatMul of an `a` of rank > 2,
//! of a batched `b` or of a 1-D operand, and Gemm (a product and a sum, with its transposes
//! and scales).

use pto_op::attr::{AttrValue, Attributes};
use pto_op::dtype::DType;
use pto_op::graph::Value;
use pto_op::ops;
use pto_op::tensor::Tensor;

use super::attribute::attr_i64;
use super::importer::Importer;
use crate::error::OnnxError;
use crate::proto::NodeProto;

impl Importer {
    /// MatMul: of two matrices, the table's `std.matmul`; else
    /// [`Importer::matmul_beyond_table`].
    pub(super) fn matmul(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        if self.matmul_beyond_table(node, label)? {
            self.standard(node, label)?;
        }
        Ok(())
    }

    /// The product `a @ b` of two values: `std.matmul` with a batch of `a` reshaped into its
    /// rows (the kernel's form), or `std.batch_matmul` when `b` has a batch too.
    fn product(&self, a: &Value, b: &Value, label: &str) -> Result<Value, OnnxError> {
        let (ad, bd) = (a.shape().dims().to_vec(), b.shape().dims().to_vec());
        if ad.len() < 2 || bd.len() < 2 {
            return Err(OnnxError::node(
                label,
                format!(
                    "MatMul of shapes {} and {}: pto-op multiplies operands of rank >= 2",
                    a.shape(),
                    b.shape()
                ),
            ));
        }
        if bd.len() > 2 {
            return self.one(
                ops::batch_matmul::NAME,
                &[a.clone(), b.clone()],
                Attributes::new(),
                label,
            );
        }
        let k = ad[ad.len() - 1];
        let rows: usize = ad[..ad.len() - 1].iter().product();
        let a2 = self.reshape(a, &[rows, k], label)?;
        let y = self.one(
            ops::matmul::NAME,
            &[a2, b.clone()],
            Attributes::new(),
            label,
        )?;
        let mut out = ad[..ad.len() - 1].to_vec();
        out.push(bd[1]);
        self.reshape(&y, &out, label)
    }

    /// MatMul beyond the table's form (an `a` of rank > 2, a batched `b`, or a 1-D operand);
    /// true for the plain product of two matrices, which the table imports.
    ///
    /// A 1-D operand is numpy's: `a [k]` is read as the matrix `[1, k]` and `b [k]` as
    /// `[k, 1]`, and the dim added is removed from the product (`[k] @ [k]` is a scalar).
    fn matmul_beyond_table(&mut self, node: &NodeProto, label: &str) -> Result<bool, OnnxError> {
        let ([a, b], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Ok(false);
        };
        let (mut a, mut b) = (self.data_value(a)?, self.data_value(b)?);
        if a.shape().rank() == 2 && b.shape().rank() == 2 {
            return Ok(true);
        }
        let (a_vector, b_vector) = (a.shape().rank() == 1, b.shape().rank() == 1);
        if a_vector {
            a = self.reshape(&a, &[1, a.shape().dims()[0]], label)?;
        }
        if b_vector {
            b = self.reshape(&b, &[b.shape().dims()[0], 1], label)?;
        }
        let mut product = self.product(&a, &b, label)?;
        if a_vector || b_vector {
            let mut dims = product.shape().dims().to_vec();
            // The product `[.., m, n]` has rank >= 2: `a`'s row is m, `b`'s column n.
            let row = dims.len() - 2;
            if b_vector {
                dims.pop();
            }
            if a_vector {
                dims.remove(row);
            }
            product = self.reshape(&product, &dims, label)?;
        }
        self.define(y, product)?;
        Ok(false)
    }

    /// Gemm: `alpha * A' @ B' + beta * C` with `'` the optional transposes.
    pub(super) fn gemm(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let [y] = node.output.as_slice() else {
            return Err(OnnxError::node(label, "Gemm has one output".into()));
        };
        let name = |i: usize| node.input.get(i).filter(|n| !n.is_empty());
        let (Some(a), Some(b)) = (name(0), name(1)) else {
            return Err(OnnxError::node(label, "Gemm needs inputs A and B".into()));
        };
        let transposed =
            |importer: &mut Importer, input: &str, flag: &str| -> Result<Value, OnnxError> {
                let value = importer.data_value(input)?;
                if attr_i64(node, flag, 0, label)? == 0 {
                    return Ok(value);
                }
                let mut attrs = Attributes::new();
                attrs.insert("perm".into(), AttrValue::I64s(vec![1, 0]));
                importer.one(ops::transpose::NAME, &[value], attrs, label)
            };
        let a = transposed(self, a, "transA")?;
        let b = transposed(self, b, "transB")?;
        let mut product = self.product(&a, &b, label)?;
        let scale = |importer: &mut Importer,
                     v: Value,
                     factor: f32,
                     what: &str|
         -> Result<Value, OnnxError> {
            if factor == 1.0 {
                return Ok(v);
            }
            let c = importer.scalar_weight(&format!("{y}:{what}"), factor, v.dtype(), label)?;
            importer.one(ops::mul::NAME, &[v, c], Attributes::new(), label)
        };
        let float_attr = |name: &str| match node.attribute.iter().find(|a| a.name == name) {
            Some(a) => a.f.unwrap_or(1.0),
            None => 1.0,
        };
        product = scale(self, product, float_attr("alpha"), "alpha")?;
        if let Some(c) = name(2) {
            let c = self.data_value(c)?;
            let c = scale(self, c, float_attr("beta"), "beta")?;
            product = self.one(ops::add::NAME, &[product, c], Attributes::new(), label)?;
        }
        self.define(y, product)
    }

    /// A weight of shape `[1]` holding `value`.
    fn scalar_weight(
        &mut self,
        name: &str,
        value: f32,
        dtype: DType,
        label: &str,
    ) -> Result<Value, OnnxError> {
        let tensor = Tensor::from_vec([1], vec![value])
            .map_err(|e| OnnxError::node(label, e.to_string()))?
            .cast(dtype);
        self.new_constant(name, tensor)?;
        self.data_value(name)
    }
}
