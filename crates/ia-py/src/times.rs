//! The time outputs of `impact_adjoint.jax.solver`: the first `K` event
//! times (`max_events`), then the first firing time of each transition
//! named in `first` (`first.<transition>.time`, [`Trajectory::first_firing`]),
//! each `inf` when the run has no such event.
//!
//! Every output reads one event of the run or none ([`TimeOutputs::slots`]),
//! so its value, the seed its cotangent gives the adjoint pass and its
//! tangent (a row of the forward event-time Jacobian) all come from that
//! one event; an output without an event is a constant (`inf`) whose
//! cotangent is not read and whose derivatives are zero.

use ia_core::{name_index, FirstFiring, HybridError, HybridSystem, Trajectory};

/// Which events a solver's time outputs read.
pub(crate) struct TimeOutputs {
    /// `K`: the first `K` events' times come first.
    max_events: usize,
    /// The transitions named in `first`, by index into the system's.
    first: Vec<usize>,
    /// Their names, for messages.
    names: Vec<String>,
}

impl TimeOutputs {
    /// The first `max_events` event times, then the first firing times of
    /// the transitions named in `first`; an unknown name is the library's
    /// `unknown_name` error (key `first[i]`), listing the valid names.
    pub(crate) fn new(
        max_events: usize,
        first: &[String],
        system: &HybridSystem,
    ) -> Result<Self, HybridError> {
        let transitions: Vec<String> = system
            .transitions()
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        let indices = first
            .iter()
            .enumerate()
            .map(|(i, name)| name_index(&format!("first[{i}] transition"), &transitions, name))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            max_events,
            first: indices,
            names: first.to_vec(),
        })
    }

    /// The number of time outputs: `K` plus the named transitions.
    pub(crate) fn len(&self) -> usize {
        self.max_events + self.first.len()
    }

    /// The number of named transitions (`F`).
    pub(crate) fn first_count(&self) -> usize {
        self.first.len()
    }

    /// For each time output in order, the position in
    /// `trajectory.events` of the event it reads, or `None` (the output
    /// is `inf`, a constant).
    pub(crate) fn slots<'t>(
        &'t self,
        trajectory: &'t Trajectory,
    ) -> impl Iterator<Item = Option<usize>> + 't {
        let events = trajectory.events.len();
        let firsts = self
            .first
            .iter()
            .map(move |&t| match trajectory.first_firing(t) {
                FirstFiring::At(i) => Some(i),
                // The solver records every event, so `NotRecorded` does
                // not arise; an event not in the record has no time to
                // give either way.
                FirstFiring::Never | FirstFiring::NotRecorded => None,
            });
        (0..self.max_events)
            .map(move |k| (k < events).then_some(k))
            .chain(firsts)
    }

    /// The cotangents `weights` (one per time output) that seed an adjoint
    /// pass must be finite where the output reads an event (those of `inf`
    /// outputs are not read).
    pub(crate) fn check_cotangents(
        &self,
        weights: &[f64],
        trajectory: &Trajectory,
    ) -> Result<(), HybridError> {
        let time = trajectory.final_time;
        let events = trajectory.events.len().min(self.max_events);
        HybridError::check_finite(
            "cotangent of event time",
            &[],
            &weights[..events.min(weights.len())],
            time,
        )?;
        let firsts = self.slots(trajectory).skip(self.max_events);
        for ((weight, slot), name) in weights
            .iter()
            .skip(self.max_events)
            .zip(firsts)
            .zip(&self.names)
        {
            if slot.is_some() {
                HybridError::check_finite(
                    "cotangent of the first firing time of",
                    std::slice::from_ref(name),
                    std::slice::from_ref(weight),
                    time,
                )?;
            }
        }
        Ok(())
    }
}
