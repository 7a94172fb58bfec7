//! The exact solver on a flow of 2x2 linear pairs: a feedforward network of
//! current-based neurons (`tau_mem V' = -V + I`, `tau_syn I' = -I`, the
//! test network of `crates/ia-events/tests/pair_net`), 5 inputs, 100 and
//! 1,000 hidden neurons, 3 outputs, `tau_mem = 20`, `tau_syn = 5`. Criterion's
//! throughput is the number of events, so its report reads as primal
//! events per second.
//!
//! ```text
//! cargo bench -p ia-benches --bench blocks
//! ```
//!
//! This run records every event with its states, so an event carries every
//! neuron to its time (O(n) per event) and the rate falls with the
//! network's size; the run that keeps no event states advances only the
//! neurons an event touches (the `yinyang_scaling` bench); see
//! docs/method.md. Measured once on
//! the shared 2-core machine: about 46,000 events per second at 100 hidden
//! neurons and 10,000 at 1,000.

#[path = "../../crates/ia-events/tests/pair_net/mod.rs"]
mod pair_net;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ia_events::{exact, EventOptions, Problem};
use pair_net::{params, system, Net};
use std::hint::black_box;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("blocks");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for hidden in [100, 1000] {
        let net = Net {
            inputs: 5,
            hidden,
            outputs: 3,
        };
        let system = system(net);
        let n = system.state_dim();
        // The outputs' weights shrink with the hidden layer, so that an
        // output's input stays of the same size (no runaway firing).
        let mut p = params(net, 20.0, 5.0, 4.0);
        for k in 0..net.outputs {
            for j in 0..hidden {
                p[net.w_o(k, j)] *= 10.0 / hidden as f64;
            }
        }
        let problem =
            Problem::new(&system, vec![0.0; n], p, 40.0).with_event_options(EventOptions {
                max_events: 1_000_000,
                ..EventOptions::default()
            });
        let run = exact::simulate(&problem).map_err(|e| e.to_string());
        let events = run.expect("exact run").events.len();
        group.throughput(Throughput::Elements(events as u64));
        group.bench_function(BenchmarkId::new("exact_primal", hidden), |b| {
            b.iter(|| black_box(exact::simulate(&problem).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
