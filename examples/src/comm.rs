//! Collective communication of a tensor-parallel group, as ordinary ops: each device's
//! graph calls them where a real deployment does (after a row-parallel projection, on the
//! sharded logits), and their `#[estimator]` prices them on the links of the device's node
//! profile ([`pto_estimator::llm::NodeProfile`]: HCCS within an Atlas 800I A2, with its
//! bandwidth, latency and the collective's algorithm).
//!
//! A graph is one device's program. The references compute the collective for the
//! symmetric case, every device of the group holding the same tensor (the only one a
//! single graph can state): the sum of `ranks` equal tensors, `ranks` copies side by side.

use pto_estimator::llm::NodeProfile;
use pto_op::prelude::*;

fn check_ranks(ranks: i64) -> Result<usize, OpError> {
    usize::try_from(ranks)
        .ok()
        .filter(|&r| r >= 1)
        .ok_or_else(|| {
            OpError::invalid(format!(
                "`ranks` is {ranks}; a group has at least one device"
            ))
        })
}

/// The estimate of a collective on `device`'s node, or NaN (refused by the estimator,
/// naming this estimator) when the device has no node profile to price it on.
fn on_node(device: &DeviceProfile, cost: impl Fn(&NodeProfile) -> f64) -> Estimate {
    Estimate::seconds(NodeProfile::of_device(&device.name).map_or(f64::NAN, cost))
}

/// Sum of `x` over the `ranks` devices of the group, every device getting the sum.
#[custom_op(name = "comm.all_reduce", params(ranks: i64 = 1))]
pub mod all_reduce {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        check_ranks(p.ranks)?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let ranks = check_ranks(p.ranks)? as f32;
        Ok(Tensor::from_f32_array(
            x.to_f32_array().mapv(|v| v * ranks),
            x.dtype(),
        ))
    }

    /// The node's all-reduce of `x`'s bytes over `ranks` devices: the faster of a ring and
    /// a tree ([`NodeProfile::all_reduce_seconds`]).
    #[estimator]
    fn estimate(info: &OpInvokeInfo, device: &DeviceProfile) -> Estimate {
        let ranks = info
            .param::<i64>("ranks")
            .and_then(|r| usize::try_from(r).ok())
            .unwrap_or(1);
        let bytes = info.inputs[0].bytes();
        on_node(device, |node| node.all_reduce_seconds(bytes, ranks))
    }
}

/// `x` of every device of the group, side by side along the last axis.
#[custom_op(name = "comm.all_gather", params(ranks: i64 = 1))]
pub mod all_gather {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        let ranks = check_ranks(p.ranks)?;
        let mut dims = x.dims().to_vec();
        let last = dims.last_mut().ok_or_else(|| {
            OpError::input("x", "is a scalar; all_gather joins along the last axis")
        })?;
        *last *= ranks;
        Ok(Shape::from(dims))
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let ranks = check_ranks(p.ranks)?;
        let x32 = x.to_f32_array();
        let axis = ndarray::Axis(x32.ndim() - 1);
        let copies: Vec<_> = (0..ranks).map(|_| x32.view()).collect();
        let y = ndarray::concatenate(axis, &copies)
            .map_err(|e| OpError::invalid(format!("all_gather of {}: {e}", x.tensor_type())))?;
        Ok(Tensor::from_f32_array(y, x.dtype()))
    }

    /// The node's ring all-gather of the gathered result's bytes over `ranks` devices
    /// ([`NodeProfile::all_gather_seconds`]).
    #[estimator]
    fn estimate(info: &OpInvokeInfo, device: &DeviceProfile) -> Estimate {
        let ranks = info
            .param::<i64>("ranks")
            .and_then(|r| usize::try_from(r).ok())
            .unwrap_or(1);
        let bytes = info.outputs[0].bytes();
        on_node(device, |node| node.all_gather_seconds(bytes, ranks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_references_are_the_symmetric_collectives() {
        let x = Tensor::random_uniform([2, 3], DType::F32, 7, -1.0, 1.0);
        let attrs = all_reduce::Params { ranks: 4 }.to_attributes();
        let sum = all_reduce::def()
            .run_reference(&[&x], &attrs)
            .unwrap()
            .remove(0);
        for (s, v) in sum.to_f32_array().iter().zip(x.to_f32_array().iter()) {
            assert!((s - 4.0 * v).abs() < 1e-6);
        }
        let attrs = all_gather::Params { ranks: 2 }.to_attributes();
        let gathered = all_gather::def()
            .run_reference(&[&x], &attrs)
            .unwrap()
            .remove(0);
        assert_eq!(gathered.shape().dims(), &[2, 6]);
        let g = gathered.to_f32_array();
        assert_eq!(g[[1, 4]], x.to_f32_array()[[1, 1]]);
    }

    #[test]
    fn the_estimates_come_from_the_node_profile() {
        let device = DeviceProfile::builtin("ascend910b").unwrap();
        let t = pto_op::TensorType {
            shape: Shape::from([1, 8192]),
            dtype: DType::F16,
        };
        let attrs = all_reduce::Params { ranks: 8 }.to_attributes();
        let info = all_reduce::def().invoke_info(&[t], &attrs).unwrap();
        let seconds =
            (all_reduce::def().estimator.expect("has an estimator"))(&info, &device).seconds;
        let node = NodeProfile::of_device("ascend910b").unwrap();
        assert_eq!(seconds, node.all_reduce_seconds(16384, 8));
        let kirin = DeviceProfile::builtin("kirin9030").unwrap();
        assert!(
            (all_reduce::def().estimator.unwrap())(&info, &kirin)
                .seconds
                .is_nan()
        );
    }
}
