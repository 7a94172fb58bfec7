//! Hybrid systems: modes, transitions and their names.

use crate::error::HybridError;
use crate::names::{name_index, Wrt};
use crate::traits::{Flow, Guard, Reset};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A mode: a named flow and the transitions that leave it.
pub struct Mode {
    /// Mode name.
    pub name: String,
    /// The vector field in this mode.
    pub flow: Box<dyn Flow>,
    /// Indices (into [`HybridSystem::transitions`]) of the transitions leaving
    /// this mode, in declaration order.
    pub outgoing: Vec<usize>,
}

/// A transition: guard, reset, source and target mode.
pub struct Transition {
    /// Transition name.
    pub name: String,
    /// Source mode index.
    pub from: usize,
    /// Target mode index.
    pub to: usize,
    /// The event surface.
    pub guard: Box<dyn Guard>,
    /// The jump.
    pub reset: Box<dyn Reset>,
    /// Whether firing ends the run.
    pub terminal: bool,
}

/// A hybrid system: named states and parameters, modes with flows, and
/// transitions between them.
///
/// Simultaneous events: when several guards of a mode cross within the event
/// time tolerance of each other, the transition declared first fires; the
/// run restarts from its reset state, where any guard of the new mode that
/// is then already beyond zero in its direction fires at once, at the same
/// time, with its own saltation.
pub struct HybridSystem {
    id: SystemId,
    /// Shared, so that results can name their rows without copying them.
    state_names: Arc<[String]>,
    param_names: Vec<String>,
    /// Shared, so that results can name their columns without copying them.
    wrt_names: Arc<[String]>,
    modes: Vec<Mode>,
    transitions: Vec<Transition>,
}

impl std::fmt::Debug for HybridSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HybridSystem")
            .field("state_names", &self.state_names)
            .field("param_names", &self.param_names)
            .field("modes", &self.mode_names())
            .field("transitions", &self.transition_names())
            .finish()
    }
}

impl HybridSystem {
    /// Starts a system with the given state and parameter names.
    pub fn builder(states: &[&str], params: &[&str]) -> HybridSystemBuilder {
        HybridSystemBuilder {
            state_names: states.iter().map(|s| s.to_string()).collect(),
            param_names: params.iter().map(|s| s.to_string()).collect(),
            modes: Vec::new(),
            transitions: Vec::new(),
        }
    }

    /// This system's identity: distinct for every system built in the
    /// process (never reused, even once a system is dropped).
    ///
    /// A system cannot change once built (no method takes it mutably, and
    /// what its flows, guards and resets declare of their structure is
    /// theirs for life), so what a solver finds from the system alone (the
    /// exact solver's plan of its transitions) may be kept under this id
    /// and taken again by the next run of the same system, with nothing
    /// compared but the id.
    ///
    /// ```
    /// # use ia_core::{Autodiff, FlowFn, HybridSystem, Scalar};
    /// # struct Decay;
    /// # impl FlowFn for Decay {
    /// #     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) { d[0] = -p[0] * x[0]; }
    /// # }
    /// let build = || HybridSystem::builder(&["x"], &["k"]).mode("decay", Autodiff(Decay)).build().unwrap();
    /// let (one, other) = (build(), build());
    /// assert_eq!(one.id(), one.id());
    /// assert_ne!(one.id(), other.id());
    /// ```
    pub fn id(&self) -> SystemId {
        self.id
    }

    /// Number of state entries.
    pub fn state_dim(&self) -> usize {
        self.state_names.len()
    }

    /// Number of parameters.
    pub fn param_dim(&self) -> usize {
        self.param_names.len()
    }

    /// State names, in order.
    pub fn state_names(&self) -> &[String] {
        &self.state_names
    }

    /// The state names, shared: a clone is a reference count, not a copy
    /// (for results that name their rows).
    pub fn shared_state_names(&self) -> Arc<[String]> {
        Arc::clone(&self.state_names)
    }

    /// Parameter names, in order.
    pub fn param_names(&self) -> &[String] {
        &self.param_names
    }

    /// Modes, in declaration order.
    pub fn modes(&self) -> &[Mode] {
        &self.modes
    }

    /// Transitions, in declaration order.
    pub fn transitions(&self) -> &[Transition] {
        &self.transitions
    }

    /// Mode names, in order.
    pub fn mode_names(&self) -> Vec<String> {
        self.modes.iter().map(|m| m.name.clone()).collect()
    }

    /// Transition names, in order.
    pub fn transition_names(&self) -> Vec<String> {
        self.transitions.iter().map(|t| t.name.clone()).collect()
    }

    /// Index of the mode named `name`, or an error listing the valid names.
    pub fn mode_index(&self, name: &str) -> Result<usize, HybridError> {
        // The names are collected only for the error.
        self.modes
            .iter()
            .position(|m| m.name == name)
            .map_or_else(|| name_index("mode", &self.mode_names(), name), Ok)
    }

    /// Index of the transition named `name`, or an error listing the valid
    /// names.
    pub fn transition_index(&self, name: &str) -> Result<usize, HybridError> {
        // The names are collected only for the error.
        self.transitions
            .iter()
            .position(|t| t.name == name)
            .map_or_else(
                || name_index("transition", &self.transition_names(), name),
                Ok,
            )
    }

    /// Index of the state entry named `name`, or an error listing the valid names.
    pub fn state_index(&self, name: &str) -> Result<usize, HybridError> {
        name_index("state", &self.state_names, name)
    }

    /// Index of the parameter named `name`, or an error listing the valid names.
    pub fn param_index(&self, name: &str) -> Result<usize, HybridError> {
        name_index("parameter", &self.param_names, name)
    }

    /// Names of the sensitivity inputs: `initial.<state>` then `param.<name>`.
    pub fn wrt_names(&self) -> &[String] {
        &self.wrt_names
    }

    /// The sensitivity inputs' names, shared: a clone is a reference count,
    /// not a copy (for results that name their columns).
    pub fn shared_wrt_names(&self) -> Arc<[String]> {
        Arc::clone(&self.wrt_names)
    }

    /// The column of the input labelled `label` (`initial.<state>` or
    /// `param.<name>`) among [`HybridSystem::wrt_names`], or an error
    /// listing the valid labels.
    pub fn wrt_index(&self, label: &str) -> Result<usize, HybridError> {
        name_index("sensitivity input", self.wrt_names(), label)
    }

    /// The input labelled `label` (`initial.<state>` or `param.<name>`), or
    /// an error listing the valid labels.
    ///
    /// ```
    /// # use ia_core::{Autodiff, FlowFn, HybridSystem, Scalar, Wrt};
    /// # struct Decay;
    /// # impl FlowFn for Decay {
    /// #     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) { d[0] = -p[0] * x[0]; }
    /// # }
    /// let system = HybridSystem::builder(&["x"], &["k"]).mode("decay", Autodiff(Decay)).build().unwrap();
    /// assert_eq!(system.wrt("param.k").unwrap(), Wrt::Param(0));
    /// assert_eq!(system.wrt_label(Wrt::Initial(0)), "initial.x");
    /// let err = system.wrt("k").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "unknown sensitivity input 'k'; valid sensitivity input names: initial.x, param.k"
    /// );
    /// ```
    pub fn wrt(&self, label: &str) -> Result<Wrt, HybridError> {
        Ok(Wrt::of_column(self.wrt_index(label)?, self.state_dim()))
    }

    /// The label of `wrt` (`initial.<state>` or `param.<name>`).
    ///
    /// # Panics
    ///
    /// If `wrt` is not an input of this system (an index out of range).
    pub fn wrt_label(&self, wrt: Wrt) -> &str {
        &self.wrt_names()[wrt.column(self.state_dim())]
    }
}

/// The identity of a [`HybridSystem`] ([`HybridSystem::id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SystemId(u64);

impl SystemId {
    /// An id no system of this process had before.
    fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        SystemId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// The source mode of a transition, by name: the third argument of
/// [`HybridSystemBuilder::transition`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FromMode<'a>(pub &'a str);

/// The target mode of a transition, by name: the fourth argument of
/// [`HybridSystemBuilder::transition`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ToMode<'a>(pub &'a str);

/// Builds a [`HybridSystem`]; see [`HybridSystem::builder`].
pub struct HybridSystemBuilder {
    state_names: Vec<String>,
    param_names: Vec<String>,
    modes: Vec<(String, Box<dyn Flow>)>,
    transitions: Vec<PendingTransition>,
}

struct PendingTransition {
    name: String,
    from: String,
    to: String,
    guard: Box<dyn Guard>,
    reset: Box<dyn Reset>,
    terminal: bool,
}

impl HybridSystemBuilder {
    /// Adds a mode with its flow.
    pub fn mode(mut self, name: &str, flow: impl Flow + 'static) -> Self {
        self.modes.push((name.to_string(), Box::new(flow)));
        self
    }

    /// Adds a transition named `name` from mode `from` to mode `to`, which
    /// fires when `guard` crosses zero in its direction and applies `reset`.
    ///
    /// The source and target are wrapped in [`FromMode`] and [`ToMode`], so
    /// that they cannot be swapped by accident: the wrong order does not
    /// compile.
    ///
    /// ```
    /// use ia_core::{Direction, FromMode, HybridSystem, Identity, ToMode};
    /// # use ia_core::{Autodiff, FlowFn, GuardFn, Scalar};
    /// # struct Drift;
    /// # impl FlowFn for Drift {
    /// #     fn rate<S: Scalar>(&self, _t: S, _x: &[S], p: &[S], d: &mut [S]) { d[0] = p[0]; }
    /// # }
    /// # struct Above;
    /// # impl GuardFn for Above {
    /// #     fn direction(&self) -> Direction { Direction::Rising }
    /// #     fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S { x[0] - 1.0 }
    /// # }
    /// let system = HybridSystem::builder(&["x"], &["k"])
    ///     .mode("low", Autodiff(Drift))
    ///     .mode("high", Autodiff(Drift))
    ///     .transition("cross", FromMode("low"), ToMode("high"), Autodiff(Above), Identity)
    ///     .build()
    ///     .unwrap();
    /// let cross = &system.transitions()[0];
    /// assert_eq!((cross.from, cross.to), (0, 1));
    /// ```
    ///
    /// ```compile_fail,E0308
    /// # use ia_core::{FromMode, HybridSystem, Identity, ToMode};
    /// # fn swapped(b: ia_core::HybridSystemBuilder, g: impl ia_core::Guard + 'static) {
    /// b.transition("cross", ToMode("high"), FromMode("low"), g, Identity);
    /// # }
    /// ```
    pub fn transition(
        self,
        name: &str,
        from: FromMode<'_>,
        to: ToMode<'_>,
        guard: impl Guard + 'static,
        reset: impl Reset + 'static,
    ) -> Self {
        self.push_transition(name, from.0, to.0, Box::new(guard), Box::new(reset), false)
    }

    /// Adds a transition that ends the run when it fires (its reset is applied
    /// to the final state); arguments as in [`HybridSystemBuilder::transition`].
    pub fn terminal_transition(
        self,
        name: &str,
        from: FromMode<'_>,
        to: ToMode<'_>,
        guard: impl Guard + 'static,
        reset: impl Reset + 'static,
    ) -> Self {
        self.push_transition(name, from.0, to.0, Box::new(guard), Box::new(reset), true)
    }

    fn push_transition(
        mut self,
        name: &str,
        from: &str,
        to: &str,
        guard: Box<dyn Guard>,
        reset: Box<dyn Reset>,
        terminal: bool,
    ) -> Self {
        self.transitions.push(PendingTransition {
            name: name.to_string(),
            from: from.to_string(),
            to: to.to_string(),
            guard,
            reset,
            terminal,
        });
        self
    }

    /// Checks names and wires transitions to modes.
    pub fn build(self) -> Result<HybridSystem, HybridError> {
        if self.state_names.is_empty() {
            return Err(HybridError::invalid(
                "state names",
                "[]",
                "a hybrid system needs at least one state entry",
            ));
        }
        if self.modes.is_empty() {
            return Err(HybridError::invalid(
                "modes",
                "[]",
                "a hybrid system needs at least one mode",
            ));
        }
        let mode_names: Vec<String> = self.modes.iter().map(|(n, _)| n.clone()).collect();
        for (kind, names) in [
            ("state", &self.state_names),
            ("parameter", &self.param_names),
            ("mode", &mode_names),
        ] {
            if let Some(dup) = first_duplicate(names.iter().map(String::as_str)) {
                return Err(HybridError::invalid(
                    format!("{kind} names"),
                    dup,
                    format!("each {kind} name must be unique"),
                ));
            }
        }
        if let Some(dup) = first_duplicate(self.transitions.iter().map(|t| t.name.as_str())) {
            return Err(HybridError::invalid(
                "transition names",
                dup,
                "each transition name must be unique",
            ));
        }
        let mut modes: Vec<Mode> = self
            .modes
            .into_iter()
            .map(|(name, flow)| Mode {
                name,
                flow,
                outgoing: Vec::new(),
            })
            .collect();
        let mut transitions = Vec::with_capacity(self.transitions.len());
        for (index, t) in self.transitions.into_iter().enumerate() {
            let from = name_index("mode", &mode_names, &t.from)?;
            let to = name_index("mode", &mode_names, &t.to)?;
            modes[from].outgoing.push(index);
            transitions.push(Transition {
                name: t.name,
                from,
                to,
                guard: t.guard,
                reset: t.reset,
                terminal: t.terminal,
            });
        }
        let wrt_names = Wrt::labels(&self.state_names, &self.param_names).into();
        Ok(HybridSystem {
            id: SystemId::next(),
            state_names: self.state_names.into(),
            param_names: self.param_names,
            wrt_names,
            modes,
            transitions,
        })
    }
}

fn first_duplicate<'a>(names: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    for n in names {
        if !seen.insert(n) {
            return Some(n.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Direction, FlowPartials, GuardPartials, Identity};

    struct Still;
    impl Flow for Still {
        fn rate(&self, _t: f64, _x: &[f64], _p: &[f64], dxdt: &mut [f64]) {
            dxdt.fill(0.0);
        }
        fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], _out: &mut FlowPartials) {}
    }
    struct Never;
    impl Guard for Never {
        fn direction(&self) -> Direction {
            Direction::Rising
        }
        fn value(&self, _t: f64, _x: &[f64], _p: &[f64]) -> f64 {
            -1.0
        }
        fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], _out: &mut GuardPartials) {}
    }

    #[test]
    fn unknown_target_mode_names_valid_modes() {
        let err = HybridSystem::builder(&["x"], &[])
            .mode("a", Still)
            .transition("t", FromMode("a"), ToMode("b"), Never, Identity)
            .build()
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("unknown mode 'b'") && text.contains("a"),
            "{text}"
        );
    }

    #[test]
    fn duplicate_state_names_are_rejected() {
        let err = HybridSystem::builder(&["x", "x"], &[])
            .mode("a", Still)
            .build()
            .unwrap_err();
        assert_eq!(err.kind(), "invalid_option");
    }

    #[test]
    fn outgoing_transitions_are_wired() {
        let sys = HybridSystem::builder(&["x"], &["k"])
            .mode("a", Still)
            .mode("b", Still)
            .transition("ab", FromMode("a"), ToMode("b"), Never, Identity)
            .transition("ba", FromMode("b"), ToMode("a"), Never, Identity)
            .build()
            .unwrap();
        assert_eq!(sys.modes()[0].outgoing, vec![0]);
        assert_eq!(sys.modes()[1].outgoing, vec![1]);
        assert_eq!(sys.wrt_names(), ["initial.x", "param.k"]);
        assert_eq!(sys.param_index("z").unwrap_err().kind(), "unknown_name");
        assert_eq!(sys.transition_index("ba").unwrap(), 1);
        assert_eq!(
            sys.transition_index("ac").unwrap_err().to_string(),
            "unknown transition 'ac'; valid transition names: ab, ba"
        );
    }
}
