//! `particle-chain`: N balls of radius `r` on a line between two walls, at
//! `0` and `L`. A sized model: the scenario key `"size"` gives N (default 3).
//!
//! One mode, `flight`: free motion, `x<i>' = v<i>`, `v<i>' = 0`. States are
//! the positions `x0 .. x<N-1>`, then the velocities `v0 .. v<N-1>`.
//!
//! Transitions, all `flight -> flight` with falling guards:
//!
//! | transition | guard | reset |
//! |---|---|---|
//! | `wall_left` | `x0 - r` | `v0 <- -e v0` |
//! | `impact<i>` (balls i and i+1) | `x<i+1> - x<i> - 2r` | momentum-conserving exchange with restitution `e` |
//! | `wall_right` | `L - r - x<N-1>` | `v<N-1> <- -e v<N-1>` |
//!
//! The collision of balls `i` and `j = i + 1`, masses `m<i>`, `m<j>`:
//!
//! ```text
//! v<i> <- ((m<i> - e m<j>) v<i> + (1 + e) m<j> v<j>) / (m<i> + m<j>)
//! v<j> <- ((m<j> - e m<i>) v<j> + (1 + e) m<i> v<i>) / (m<i> + m<j>)
//! ```
//!
//! | state | default | | parameter | default |
//! |---|---|---|---|---|
//! | `x<i>` | `(i + 1) L / (N + 1)` | | `L` | 1 m |
//! | `v<i>` | `(-1)^i (0.3 + 0.4 frac(0.618034 i))` | | `r` | 0.02 m |
//! | | | | `e` | 0.95 |
//! | | | | `m<i>` | `1 + frac(0.381966 i)` kg |
//!
//! Parameters are ordered `L`, `r`, `e`, then `m0 .. m<N-1>`. The default
//! run, `t_end = 2` s, has a few impacts per ball; the unequal masses and
//! speeds keep impacts apart (three bodies meeting at once is a corner the
//! saltation does not cover: its derivative depends on the direction of the
//! perturbation).
//!
//! Partials by [`ia_core::Autodiff`]; every guard reads two states at most
//! and every reset changes two velocities at most.
//!
//! ```
//! use ia_models::{Model, ParticleChain};
//!
//! let chain = ParticleChain::new(4).unwrap();
//! let spec = chain.spec();
//! assert_eq!(spec.state_names()[4], "v0");
//! assert_eq!(spec.transition_names(), ["wall_left", "impact0", "impact1", "impact2", "wall_right"]);
//! ```

use crate::rules::{ParamRule, Rule};
use crate::spec::{ModelSpec, Quantity, TransitionSpec};
use ia_core::{
    Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridError, HybridSystem, ResetFn, Scalar,
    Support, ToMode,
};

/// Largest size accepted.
pub const MAX_SIZE: usize = 10_000;

/// Parameter positions.
const L: usize = 0;
const R: usize = 1;
const E: usize = 2;
const FIRST_MASS: usize = 3;

fn frac(v: f64) -> f64 {
    v - v.floor()
}

/// The `particle-chain` model of `size` balls; see the
/// [module documentation](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParticleChain {
    size: usize,
}

impl Default for ParticleChain {
    fn default() -> Self {
        Self { size: 3 }
    }
}

impl ParticleChain {
    /// The chain of `size` balls, or an error naming the valid sizes.
    pub fn new(size: usize) -> Result<Self, HybridError> {
        if (1..=MAX_SIZE).contains(&size) {
            Ok(Self { size })
        } else {
            Err(HybridError::invalid(
                "size",
                size,
                format!("the number of particle-chain balls is 1 to {MAX_SIZE}"),
            ))
        }
    }

    /// Number of balls.
    pub fn size(&self) -> usize {
        self.size
    }
}

impl crate::model::Model for ParticleChain {
    fn name(&self) -> &'static str {
        "particle-chain"
    }

    fn spec(&self) -> ModelSpec {
        let q = |name: String, default: f64, unit: &str| Quantity {
            name,
            default,
            unit: unit.to_string(),
        };
        let n = self.size;
        let mut states: Vec<Quantity> = (0..n)
            .map(|i| q(format!("x{i}"), (i + 1) as f64 / (n + 1) as f64, "m"))
            .collect();
        states.extend((0..n).map(|i| {
            let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
            q(
                format!("v{i}"),
                sign * (0.3 + 0.4 * frac(0.618034 * i as f64)),
                "m/s",
            )
        }));
        let mut params = vec![
            q("L".into(), 1.0, "m"),
            q("r".into(), 0.02, "m"),
            q("e".into(), 0.95, "1"),
        ];
        params.extend((0..n).map(|i| q(format!("m{i}"), 1.0 + frac(0.381966 * i as f64), "kg")));
        let transition = |name: String| TransitionSpec {
            name,
            from: "flight".into(),
            to: "flight".into(),
            direction: Direction::Falling,
        };
        let mut transitions = vec![transition("wall_left".into())];
        transitions.extend((0..n.saturating_sub(1)).map(|i| transition(format!("impact{i}"))));
        transitions.push(transition("wall_right".into()));
        ModelSpec {
            name: "particle-chain".into(),
            description: format!(
                "{n} balls of radius r on a line between walls at 0 and L: x<i>' = v<i>, v<i>' = 0; \
                 impact<i> when x<i+1> - x<i> - 2r falls through 0 (momentum-conserving exchange \
                 with restitution e), wall_left when x0 - r does, wall_right when L - r - x<N-1> \
                 does (v <- -e v)."
            ),
            states,
            params,
            modes: vec!["flight".into()],
            initial_mode: "flight".into(),
            t_end: 2.0,
            transitions,
        }
    }

    fn param_rules(&self) -> &'static [ParamRule] {
        &[
            ParamRule {
                param: "L",
                rule: Rule::Positive,
                what: "distance between the walls",
            },
            ParamRule {
                param: "r",
                rule: Rule::NonNegative,
                what: "ball radius",
            },
            ParamRule {
                param: "e",
                rule: Rule::PositiveUnit,
                what: "coefficient of restitution; at e = 0 two balls that meet stay in contact, which this model does not represent",
            },
            ParamRule {
                param: "m*",
                rule: Rule::Positive,
                what: "ball mass",
            },
        ]
    }

    fn system(&self) -> HybridSystem {
        let spec = self.spec();
        let states: Vec<&str> = spec.states.iter().map(|s| s.name.as_str()).collect();
        let params: Vec<&str> = spec.params.iter().map(|s| s.name.as_str()).collect();
        let n = self.size;
        let mut builder = HybridSystem::builder(&states, &params)
            .mode("flight", Autodiff(Drift { n }))
            .transition(
                "wall_left",
                FromMode("flight"),
                ToMode("flight"),
                Autodiff(WallGap { n, right: false }),
                Autodiff(WallBounce { n, ball: 0 }),
            );
        for i in 0..n.saturating_sub(1) {
            builder = builder.transition(
                &format!("impact{i}"),
                FromMode("flight"),
                ToMode("flight"),
                Autodiff(Gap { balls: [i, i + 1] }),
                Autodiff(Collision { n, left: i }),
            );
        }
        let builder = builder.transition(
            "wall_right",
            FromMode("flight"),
            ToMode("flight"),
            Autodiff(WallGap { n, right: true }),
            Autodiff(WallBounce { n, ball: n - 1 }),
        );
        crate::table::finish(builder, "particle-chain")
    }
}

/// Free motion of `n` balls.
#[derive(Clone, Copy, Debug)]
struct Drift {
    n: usize,
}

impl FlowFn for Drift {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], dxdt: &mut [S]) {
        let (positions, velocities) = dxdt.split_at_mut(self.n);
        positions.copy_from_slice(&x[self.n..]);
        velocities.fill(S::from(0.0));
    }
}

/// `x<left+1> - x<left> - 2r`, falling.
#[derive(Clone, Copy, Debug)]
struct Gap {
    /// `[left, left + 1]`.
    balls: [usize; 2],
}

impl GuardFn for Gap {
    fn direction(&self) -> Direction {
        Direction::Falling
    }

    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        x[self.balls[1]] - x[self.balls[0]] - p[R] * 2.0
    }

    fn support(&self) -> Option<Support<'_>> {
        Some(Support {
            states: &self.balls,
            params: &[R],
        })
    }
}

/// `x0 - r` (left wall) or `L - r - x<n-1>` (right wall), falling.
#[derive(Clone, Copy, Debug)]
struct WallGap {
    n: usize,
    right: bool,
}

impl GuardFn for WallGap {
    fn direction(&self) -> Direction {
        Direction::Falling
    }

    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        if self.right {
            p[L] - p[R] - x[self.n - 1]
        } else {
            x[0] - p[R]
        }
    }
}

/// `v<ball> <- -e v<ball>`.
#[derive(Clone, Copy, Debug)]
struct WallBounce {
    n: usize,
    ball: usize,
}

impl ResetFn for WallBounce {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], x_after: &mut [S]) {
        x_after.copy_from_slice(x);
        let v = self.n + self.ball;
        x_after[v] = -(p[E] * x[v]);
    }
}

/// The collision of balls `left` and `left + 1`.
#[derive(Clone, Copy, Debug)]
struct Collision {
    n: usize,
    left: usize,
}

impl ResetFn for Collision {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], x_after: &mut [S]) {
        x_after.copy_from_slice(x);
        let (i, j) = (self.left, self.left + 1);
        let (mi, mj, e) = (p[FIRST_MASS + i], p[FIRST_MASS + j], p[E]);
        let (vi, vj) = (x[self.n + i], x[self.n + j]);
        let total = mi + mj;
        x_after[self.n + i] = ((mi - e * mj) * vi + (e + 1.0) * mj * vj) / total;
        x_after[self.n + j] = ((mj - e * mi) * vj + (e + 1.0) * mi * vi) / total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Model;

    #[test]
    fn a_collision_conserves_momentum_and_obeys_restitution() {
        // Reference: Newton's law of restitution and conservation of momentum.
        let chain = ParticleChain::new(3).unwrap();
        let p = chain.spec().default_params();
        let x = [0.2, 0.24, 0.7, 0.5, -0.3, 0.1];
        let mut after = [0.0; 6];
        Collision { n: 3, left: 0 }.apply(0.0, &x, &p, &mut after);
        let (m0, m1, e) = (p[FIRST_MASS], p[FIRST_MASS + 1], p[E]);
        let momentum = |a: f64, b: f64| m0 * a + m1 * b;
        assert!((momentum(after[3], after[4]) - momentum(x[3], x[4])).abs() < 1e-12);
        assert!((after[4] - after[3] + e * (x[4] - x[3])).abs() < 1e-12);
        assert_eq!(after[5], x[5]);
        assert_eq!(&after[..3], &x[..3]);
    }

    #[test]
    fn sizes_are_checked() {
        assert!(ParticleChain::new(0).is_err());
        let one = ParticleChain::new(1).unwrap().system();
        assert_eq!(one.transition_names(), ["wall_left", "wall_right"]);
    }
}
