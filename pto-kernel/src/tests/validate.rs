//! Validation of hand-made and edited programs.

use crate::dtype::DType;

use super::super::ir::{
    GlobalDecl, GlobalRole, Inst, MemLevel, Operand, Program, TileId, TileType,
};
use super::super::validate::{Rule, validate};
use super::{causal_attention, matmul_k_loop};

fn ty(shape: &[usize], dtype: DType, level: MemLevel) -> TileType {
    TileType {
        shape: shape.to_vec(),
        dtype,
        level,
    }
}

fn program(tiles: Vec<TileType>, body: Vec<Inst>) -> Program {
    Program {
        op: "t.valid".to_owned(),
        grid: 1,
        globals: vec![GlobalDecl {
            name: "y".to_owned(),
            shape: vec![16, 16],
            dtype: DType::F32,
            role: GlobalRole::Output,
        }]
        .into(),
        tiles: tiles.into(),
        vars: 0,
        body,
    }
}

fn error(p: &Program) -> String {
    match validate(p) {
        Ok(()) => panic!("expected an error for {p}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn cube_tiles_must_be_made_of_fractals() {
    let p = program(
        vec![
            ty(&[8, 16], DType::F16, MemLevel::L1),
            ty(&[8, 16], DType::F16, MemLevel::L0A),
        ],
        vec![
            Inst::Full {
                dst: TileId::new(0),
                value: 0.0,
            },
            Inst::Move {
                dst: TileId::new(1),
                src: TileId::new(0),
            },
        ],
    );
    assert_eq!(
        error(&p),
        "op `t.valid`: inst 0 (full): %0 is declared f16[8, 16]@l1, but the instruction \
         gives f16[8, 16]@ub"
    );
    let mut fixed = p.clone();
    fixed.tiles[TileId::new(0)].level = MemLevel::Ub;
    fixed.tiles[TileId::new(1)].level = MemLevel::L1;
    assert!(validate(&fixed).is_ok());
    fixed.tiles.push(ty(&[8, 16], DType::F16, MemLevel::L0A));
    fixed.body.push(Inst::Move {
        dst: TileId::new(2),
        src: TileId::new(1),
    });
    assert_eq!(
        error(&fixed),
        "op `t.valid`: inst 2 (move): tile %2 f16[8, 16]@l0a: dims [8, 16] must be multiples \
         of 16 in l0a (the cube works on 16x16 fractals)"
    );
    // The rule broken comes with its data, not only as text.
    let err = validate(&fixed).unwrap_err();
    assert_eq!(err.path, vec![2]);
    let Rule::BadTileType { tile, problem } = &*err.rule else {
        panic!("expected a bad tile type, got {:?}", err.rule);
    };
    assert_eq!(*tile, TileId::new(2));
    assert_eq!(
        **problem,
        Rule::CubeFractal {
            ty: ty(&[8, 16], DType::F16, MemLevel::L0A)
        }
    );
}

#[test]
fn errors_inside_loops_carry_their_path() -> Result<(), crate::error::OpError> {
    let mut p = matmul_k_loop()?.into_program();
    let Some(Inst::Loop { body, .. }) = p.body.get_mut(5) else {
        panic!("the sixth instruction is the K-loop");
    };
    let Some(Inst::Matmul { a, b, .. }) = body.get_mut(4) else {
        panic!("the fifth instruction of the body is the matmul");
    };
    *a = *b;
    assert_eq!(
        error(&p),
        "op `demo.matmul`: inst 5.4 (matmul): a must be in l0a and b in l0b, \
         got f16[32, 32]@l0b and f16[32, 32]@l0b"
    );
    Ok(())
}

#[test]
fn tiles_are_defined_once_and_before_use() {
    let full = |dst| Inst::Full {
        dst: TileId::new(dst),
        value: 1.0,
    };
    let ub = ty(&[16, 16], DType::F32, MemLevel::Ub);
    let used_early = program(
        vec![ub.clone(), ub.clone()],
        vec![
            Inst::Binary {
                dst: TileId::new(0),
                op: super::super::ir::BinaryOp::Add,
                lhs: Operand::Tile(TileId::new(1)),
                rhs: Operand::Scalar(1.0),
            },
            full(1),
        ],
    );
    assert_eq!(
        error(&used_early),
        "op `t.valid`: inst 0 (binary add): %1 is used before it is defined"
    );
    let twice = program(vec![ub.clone()], vec![full(0), full(0)]);
    assert_eq!(
        error(&twice),
        "op `t.valid`: inst 1 (full): %0 is defined twice"
    );
    let orphan = program(vec![ub.clone(), ub], vec![full(0)]);
    assert_eq!(
        error(&orphan),
        "op `t.valid`: tile %1 has a type but no instruction defines it"
    );
}

#[test]
fn loop_yields_must_match_the_carried_types() -> Result<(), crate::error::OpError> {
    let mut p = causal_attention()?.into_program();
    let position = p
        .body
        .iter()
        .position(|i| matches!(i, Inst::Loop { .. }))
        .unwrap_or_default();
    let Inst::Loop { yields, .. } = &mut p.body[position] else {
        panic!("no loop");
    };
    yields.swap(0, 2);
    let message = error(&p);
    assert!(
        message.starts_with(&format!(
            "op `demo.flash_attention`: inst {position} (loop): yield %"
        )),
        "{message}"
    );
    assert!(
        message.ends_with("is f32[16, 32]@ub, but the carried tile's type is f32[16, 1]@ub"),
        "{message}"
    );
    Ok(())
}

#[test]
fn top_k_results_must_have_the_types_the_rule_gives() {
    use crate::ir::{Inst, MemLevel, Program, TileId, TileType};
    let ty = |shape: &[usize], dtype| TileType {
        shape: shape.to_vec(),
        dtype,
        level: MemLevel::Ub,
    };
    let program = |values: TileType, indices: TileType| Program {
        op: "t.topk".into(),
        grid: 1,
        globals: vec![].into(),
        tiles: vec![ty(&[2, 8], DType::F32), values, indices].into(),
        vars: 0,
        body: vec![
            Inst::Full {
                dst: TileId::new(0),
                value: 1.0,
            },
            Inst::TopK {
                values: TileId::new(1),
                indices: TileId::new(2),
                src: TileId::new(0),
                k: 3,
            },
        ],
    };
    assert!(
        program(ty(&[2, 3], DType::F32), ty(&[2, 3], DType::I32))
            .validate()
            .is_ok()
    );
    let error = program(ty(&[2, 3], DType::F32), ty(&[2, 3], DType::F32))
        .validate()
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "op `t.topk`: inst 1 (topk): %2 is declared f32[2, 3]@ub, but the instruction gives \
         i32[2, 3]@ub"
    );
}
