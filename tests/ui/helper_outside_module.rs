use pto_op::prelude::*;

#[reference]
fn reference(x: &Tensor) -> Result<Tensor, OpError> {
    Ok(x.clone())
}

fn main() {
    let x = Tensor::from_vec([1], vec![1.0f32]).unwrap();
    let _ = reference(&x);
}
