//! One forward run and gradient of the Yin-Yang network, for an
//! instruction count (repeatable under load, unlike a timing).
//!
//! ```text
//! cargo build --release -p ia-benches --example yinyang_count
//! valgrind --tool=callgrind target/release/examples/yinyang_count 200
//! ```
//!
//! Argument: the number of hidden neurons (default 120).

use ia_benches::yinyang_net::YinYangNet;

fn main() {
    let hidden: usize = std::env::args()
        .nth(1)
        .map_or(120, |a| a.parse().expect("a number of hidden neurons"));
    let net = YinYangNet::new(hidden, (0.31, 0.64));
    let loss = |t: &ia_core::Trajectory, s: &mut ia_adjoint::LossSeeds| net.loss(t, s);
    let gradient =
        ia_adjoint::gradient(&net.problem(), &loss).expect("the Yin-Yang network's gradient");
    let norm = gradient
        .params
        .iter()
        .chain(&gradient.initial_state)
        .map(|g| g * g)
        .sum::<f64>()
        .sqrt();
    eprintln!("loss {}, |gradient| {norm:e}", gradient.value);
}
