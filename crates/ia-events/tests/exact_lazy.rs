//! The exact solver's lazy run (each block at its own last update time,
//! `EventOptions::event_states = false` and resets declaring what they read
//! and write) against its eager run on the test network of `pair_net`
//! (2x2 neuron pairs and a decoupled clock entry whose thresholds are the
//! input spikes; its resets apply themselves into a copy, not in place).
//!
//! Reference: the eager exact run of the same network (the resets without
//! declarations, every block carried to every event), itself checked
//! against mpmath in `exact_pairs.rs`. The lazy run must give the same
//! events in the same order, their times and the final state within 1e-12
//! (relative, absolute below 1): only the rounding of a block carried over
//! one long stretch instead of several differs.

mod pair_net;

use ia_events::{exact, EventOptions, Problem};
use pair_net::{params, system, system_with, Net, NET};
use rstest::rstest;

#[rstest]
#[case::strong(NET, 4.0)]
#[case::weaker(NET, 2.5)]
#[case::wider(Net { inputs: 3, hidden: 30, outputs: 3 }, 4.0)]
fn the_lazy_run_matches_the_eager_one(#[case] net: Net, #[case] scale: f64) {
    let (eager_system, lazy_system) = (system(net), system_with(net, true));
    let n = eager_system.state_dim();
    let p = params(net, 20.0, 5.0, scale);
    let eager = Problem::new(&eager_system, vec![0.0; n], p.clone(), 40.0)
        .with_observations(vec![5.0, 17.5]);
    let lazy = Problem::new(&lazy_system, vec![0.0; n], p, 40.0)
        .with_observations(vec![5.0, 17.5])
        .with_event_options(EventOptions {
            event_states: false,
            ..EventOptions::default()
        });
    let (a, b) = (
        exact::simulate(&eager).unwrap(),
        exact::simulate(&lazy).unwrap(),
    );
    assert!(a.events.len() > 12, "{}", a.events.len());
    assert!(b.event_states.is_empty());
    assert_eq!(a.events.len(), b.events.len());
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-12 * y.abs().max(1.0);
    for (e, f) in a.events.iter().zip(&b.events) {
        assert_eq!((e.transition, e.cascade_of), (f.transition, f.cascade_of));
        assert!(close(f.time, e.time), "{} vs {}", f.time, e.time);
    }
    for (x, y) in b.final_state.iter().zip(&a.final_state) {
        assert!(close(*x, *y), "{x} vs {y}");
    }
    for (o, q) in b.observations.iter().zip(&a.observations) {
        for (x, y) in o.state.iter().zip(&q.state) {
            assert!(close(*x, *y), "{x} vs {y}");
        }
    }
}
