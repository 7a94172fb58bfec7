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

use crate::pair_net;

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

/// A lazy event as seen: the touched entries, their values before and
/// after, the time shift there and the guard rate.
type LazySeen = (Vec<usize>, Vec<f64>, Vec<f64>, Vec<f64>, f64);
/// An eager event as seen: the state before, after, the time shift and the
/// guard rate.
type EagerSeen = (Vec<f64>, Vec<f64>, Vec<f64>, f64);

/// Each lazy event's touched blocks as an observer that takes them sees
/// them, and each eager event's state and geometry.
#[derive(Default)]
struct Seen {
    lazy: Vec<LazySeen>,
    eager: Vec<EagerSeen>,
    started_lazily: bool,
}

impl ia_events::Observer for Seen {
    fn takes_lazy_events(&self) -> bool {
        true
    }
    fn starts_lazily(&mut self, _run: ia_events::RunContext<'_>) {
        self.started_lazily = true;
    }
    fn lazy_event(
        &mut self,
        _run: ia_events::RunContext<'_>,
        jump: &ia_events::EventJump<'_>,
        lazy: &ia_events::LazyJump<'_>,
    ) -> Result<(), ia_core::HybridError> {
        assert!(jump.state_before.is_empty() && jump.geometry.is_none());
        self.lazy.push((
            lazy.entries.to_vec(),
            lazy.before.to_vec(),
            lazy.after.to_vec(),
            lazy.time_shift.to_vec(),
            lazy.guard_rate,
        ));
        Ok(())
    }
    fn wants_event_geometry(&self) -> bool {
        true
    }
    fn event(
        &mut self,
        _run: ia_events::RunContext<'_>,
        jump: &ia_events::EventJump<'_>,
    ) -> Result<(), ia_core::HybridError> {
        let geometry = jump.geometry.expect("asked for");
        self.eager.push((
            jump.state_before.to_vec(),
            jump.state_after.to_vec(),
            geometry.time_shift.as_slice().to_vec(),
            geometry.guard_rate,
        ));
        Ok(())
    }
}

/// Reference: the eager run's states and geometry (the time shift formed
/// over the whole state by `GeometryWorkspace`). A lazy event shows the
/// entries of the blocks it touched, with the eager run's values before
/// and after its reset there, and the time shift there; the eager time
/// shift is zero everywhere else.
#[rstest]
#[case::strong(NET, 4.0)]
#[case::wider(Net { inputs: 3, hidden: 30, outputs: 3 }, 4.0)]
fn a_lazy_event_shows_its_touched_blocks_and_time_shift(#[case] net: Net, #[case] scale: f64) {
    let system = system_with(net, true);
    let n = system.state_dim();
    let p = params(net, 20.0, 5.0, scale);
    let problem = |event_states| {
        Problem::new(&system, vec![0.0; n], p.clone(), 40.0).with_event_options(EventOptions {
            event_states,
            ..EventOptions::default()
        })
    };
    let (mut lazy, mut eager) = (Seen::default(), Seen::default());
    exact::run(&problem(false), &mut ia_events::NoExtraState, &mut lazy).unwrap();
    exact::run(&problem(true), &mut ia_events::NoExtraState, &mut eager).unwrap();
    assert!(lazy.started_lazily && !eager.started_lazily);
    assert!(eager.lazy.is_empty() && lazy.eager.is_empty());
    assert_eq!(lazy.lazy.len(), eager.eager.len());
    assert!(lazy.lazy.len() > 12);
    // The states along the way, not only at the end, differ by the
    // rounding of a block carried over one stretch instead of several: up
    // to about 1e-12 here, over the wider network's many events.
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-11 * y.abs().max(1.0);
    for ((entries, before, after, shift, rate), (x, y, w, gdot)) in
        lazy.lazy.iter().zip(&eager.eager)
    {
        assert!(close(*rate, *gdot), "{rate} vs {gdot}");
        assert!(entries.len() < n);
        for (k, &i) in entries.iter().enumerate() {
            assert!(close(before[k], x[i]), "{} vs {}", before[k], x[i]);
            assert!(close(after[k], y[i]), "{} vs {}", after[k], y[i]);
            assert!(close(shift[k], w[i]), "{} vs {}", shift[k], w[i]);
        }
        for (i, &wi) in w.iter().enumerate() {
            if !entries.contains(&i) {
                assert_eq!(wi, 0.0, "entry {i} not touched");
            }
        }
    }
}
