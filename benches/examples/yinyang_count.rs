//! One forward run and gradient of the Yin-Yang network, or one primal run
//! of the exact solver, for an instruction count (repeatable under load,
//! unlike a timing).
//!
//! ```text
//! cargo build --release -p ia-benches --example yinyang_count
//! valgrind --tool=callgrind target/release/examples/yinyang_count 200
//! valgrind --tool=callgrind target/release/examples/yinyang_count 1000 primal
//! ```
//!
//! Arguments: the number of hidden neurons (default 120), then `primal`
//! for the exact solver's run alone (no tape: lazy, as the
//! `yinyang_scaling` bench's `exact_primal`) instead of the gradient.

use ia_benches::yinyang_net::YinYangNet;

fn main() {
    let mut args = std::env::args().skip(1);
    let hidden: usize = args
        .next()
        .map_or(120, |a| a.parse().expect("a number of hidden neurons"));
    let net = YinYangNet::new(hidden, (0.31, 0.64));
    if args.next().as_deref() == Some("primal") {
        let run = ia_events::exact::simulate(&net.problem()).expect("the exact run");
        eprintln!("{} events", run.events.len());
        return;
    }
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
