//! The deepest programs validation accepts (loops [`MAX_LOOP_DEPTH`] deep, an index
//! [`MAX_INDEX_DEPTH`] deep) print, plan, schedule and execute on a 2 MiB stack (the test
//! threads' default) in a debug build: the limits keep every recursive pass in bounds.

use pto_backends::sim::exec::execute;
use pto_backends::sim::{memory, schedule};
use pto_op::DeviceProfile;
use pto_op::kernel::text::parse;
use pto_op::kernel::validate::{MAX_INDEX_DEPTH, MAX_LOOP_DEPTH};

#[test]
fn the_deepest_valid_program_runs_on_a_small_stack() {
    // The printer's form of a right-nested difference as high as allowed: parentheses
    // nest one less than its height.
    let mut index = String::from("0");
    for _ in 0..MAX_INDEX_DEPTH - 1 {
        index = format!("0 - ({index})");
    }
    let index = format!("0 - ({index})").replacen("0 - (0)", "0 - 0", 1);
    let mut text = String::from("kernel t.deep grid 1\nglobal @0 y: f32[4] output\n");
    text += "%0: f32[4]@ub = full 1.0\n";
    for i in 0..MAX_LOOP_DEPTH {
        text += &format!("loop i{i} in 0..1 {{\n");
    }
    text += &format!("store @0[{index}], %0\n");
    text += &"}\n".repeat(MAX_LOOP_DEPTH);
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let program = parse(&text).unwrap_or_else(|e| panic!("{e}"));
            let printed = program.to_string();
            assert_eq!(parse(&printed).expect("reads back"), program);
            let profile = DeviceProfile::builtin("kirin9030").expect("built-in profile");
            let plan = memory::plan(&program, &profile, true).expect("fits");
            schedule::schedule(&program, &profile, &plan, 100).expect("schedules");
            let y = execute(&program, &[]).expect("executes");
            assert_eq!(y[0].to_vec::<f32>().expect("f32"), vec![1.0; 4]);
        })
        .expect("spawn");
    handle.join().expect("no stack overflow");
}
