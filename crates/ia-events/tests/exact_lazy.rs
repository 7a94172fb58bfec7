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

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Reference: the eager exact run, as above. On random networks (time
    /// constants from nearly equal to far apart, weights jittered from a
    /// random seed, some negative), the lazy run (its rough bounds, the
    /// crossings polished from them, the pairs settled without
    /// exponentials) gives the eager run's events in the same order,
    /// their times within 1e-12.
    #[test]
    fn the_lazy_queue_gives_the_eager_events_on_random_networks(
        tau_syn in 3.0f64..19.9,
        scale in 2.5f64..5.0,
        seed in proptest::prelude::any::<u64>(),
        hidden in 3usize..12,
    ) {
        let net = Net { inputs: 3, hidden, outputs: 2 };
        let (eager_system, lazy_system) = (system(net), system_with(net, true));
        let n = eager_system.state_dim();
        let mut p = params(net, 20.0, tau_syn, scale);
        let mut state = seed;
        for w in p.iter_mut().skip(3 + net.inputs) {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *w *= 0.5 + (state >> 11) as f64 / (1u64 << 53) as f64;
        }
        let eager = Problem::new(&eager_system, vec![0.0; n], p.clone(), 40.0);
        let lazy = Problem::new(&lazy_system, vec![0.0; n], p, 40.0).with_event_options(
            EventOptions {
                event_states: false,
                ..EventOptions::default()
            },
        );
        let (a, b) = (
            exact::simulate(&eager).unwrap(),
            exact::simulate(&lazy).unwrap(),
        );
        // Some neuron fired besides the inputs.
        proptest::prop_assert!(a.events.len() > net.inputs, "{}", a.events.len());
        proptest::prop_assert_eq!(a.events.len(), b.events.len());
        for (e, f) in a.events.iter().zip(&b.events) {
            proptest::prop_assert_eq!((e.transition, e.cascade_of), (f.transition, f.cascade_of));
            proptest::prop_assert!(
                (f.time - e.time).abs() <= 1e-12 * e.time.abs().max(1.0),
                "{} vs {}", f.time, e.time
            );
        }
    }
}
