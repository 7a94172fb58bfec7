//! A ball bouncing on bumpy ground: the scaling case.
//!
//! State `(x, y, vx, vy)` (always 4), parameters `(g, e, mu, a_1, ..., a_N)`.
//! Flight is ballistic (`ia_models::ball2d_flat::Flight`). The ground is
//!
//! ```text
//! y = h(x) = sum_{k=1..N} a_k sin(k x) / k^2
//! ```
//!
//! and the impact fires when `y - h(x)` falls through zero. The reset keeps
//! the position and maps the velocity with the contact normal
//! `n = (-s, 1) / sqrt(1 + s^2)`, `s = h'(x)`: the tangential part is scaled
//! by `mu`, the normal part reversed and scaled by `e`:
//!
//! ```text
//! c = (vy - s vx) / (1 + s^2)          (so that (v.n) n = c (-s, 1))
//! vx+ = mu vx + (mu + e) c s
//! vy+ = mu vy - (mu + e) c
//! ```
//!
//! The `a_k` enter the guard and the reset only, so the flow (and the cost of
//! a primal step) does not depend on them; the guard is evaluated once per
//! step (plus root finding) at `O(N)` cost, with `sin(k x)` and `cos(k x)` by
//! the angle-addition recurrence rather than `N` calls of `sin`.
//!
//! Partials are hand-written (checked against [`ia_core::Autodiff`] in this
//! crate's tests): `Autodiff` would cost `N + 5` dual evaluations of an
//! `O(N)` sum per call.

use ia_core::{
    Direction, FromMode, Guard, GuardPartials, HybridSystem, Reset, ResetPartials, ToMode,
};
use ia_events::{Problem, SolverChoice};
use ia_models::ball2d_flat::Flight;

/// Index of the first bump amplitude in the parameter vector.
pub const FIRST_BUMP: usize = 3;

/// `h(x)`, `h'(x)`, `h''(x)` for amplitudes `a` (`a[k-1]` is `a_k`).
#[inline]
pub fn ground(x: f64, a: &[f64]) -> (f64, f64, f64) {
    let (s1, c1) = x.sin_cos();
    let (mut s, mut c) = (s1, c1);
    let (mut h, mut dh, mut ddh) = (0.0, 0.0, 0.0);
    for (i, &ak) in a.iter().enumerate() {
        let k = (i + 1) as f64;
        h += ak * s / (k * k);
        dh += ak * c / k;
        ddh -= ak * s;
        let next_s = s * c1 + c * s1;
        c = c * c1 - s * s1;
        s = next_s;
    }
    (h, dh, ddh)
}

/// The bumpy ground as a guard: `g = y - h(x)`, falling.
#[derive(Clone, Copy, Debug, Default)]
pub struct BumpyGround;

impl Guard for BumpyGround {
    fn direction(&self) -> Direction {
        Direction::Falling
    }

    fn value(&self, _t: f64, x: &[f64], p: &[f64]) -> f64 {
        x[1] - ground(x[0], &p[FIRST_BUMP..]).0
    }

    fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut GuardPartials) {
        let a = &p[FIRST_BUMP..];
        let (s1, c1) = x[0].sin_cos();
        let (mut s, mut c) = (s1, c1);
        let mut dh = 0.0;
        for (i, &ak) in a.iter().enumerate() {
            let k = (i + 1) as f64;
            dh += ak * c / k;
            out.p[FIRST_BUMP + i] = -s / (k * k);
            let next_s = s * c1 + c * s1;
            c = c * c1 - s * s1;
            s = next_s;
        }
        out.x[0] = -dh;
        out.x[1] = 1.0;
    }
}

/// The impact on the bumpy ground; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default)]
pub struct BumpyImpact;

/// The velocity map for slope `s` and its partials with respect to
/// `(vx, vy, s, e, mu)`: returns `([vx+, vy+], [[d vx+ / d ...], [d vy+ / d ...]])`.
#[inline]
fn velocity_map(vx: f64, vy: f64, s: f64, e: f64, mu: f64) -> ([f64; 2], [[f64; 5]; 2]) {
    let d = 1.0 + s * s;
    let c = (vy - s * vx) / d;
    let (dc_dvx, dc_dvy, dc_ds) = (-s / d, 1.0 / d, (-vx - 2.0 * s * c) / d);
    let me = mu + e;
    let value = [mu * vx + me * c * s, mu * vy - me * c];
    let partials = [
        [
            mu + me * s * dc_dvx,
            me * s * dc_dvy,
            me * (dc_ds * s + c),
            c * s,
            vx + c * s,
        ],
        [-me * dc_dvx, mu - me * dc_dvy, -me * dc_ds, -c, vy - c],
    ];
    (value, partials)
}

impl Reset for BumpyImpact {
    fn apply(&self, _t: f64, x: &[f64], p: &[f64], x_after: &mut [f64]) {
        let (_, s, _) = ground(x[0], &p[FIRST_BUMP..]);
        let (v, _) = velocity_map(x[2], x[3], s, p[1], p[2]);
        x_after[0] = x[0];
        x_after[1] = x[1];
        x_after[2] = v[0];
        x_after[3] = v[1];
    }

    fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut ResetPartials) {
        let a = &p[FIRST_BUMP..];
        let (_, s, ds_dx) = ground(x[0], a);
        let (_, d) = velocity_map(x[2], x[3], s, p[1], p[2]);
        out.x[(0, 0)] = 1.0;
        out.x[(1, 1)] = 1.0;
        for (row, dr) in d.iter().enumerate() {
            let r = row + 2;
            out.x[(r, 0)] = dr[2] * ds_dx;
            out.x[(r, 2)] = dr[0];
            out.x[(r, 3)] = dr[1];
            out.p[(r, 1)] = dr[3];
            out.p[(r, 2)] = dr[4];
        }
        // ds/da_k = cos(k x) / k.
        let (s1, c1) = x[0].sin_cos();
        let (mut sk, mut ck) = (s1, c1);
        for i in 0..a.len() {
            let k = (i + 1) as f64;
            let ds = ck / k;
            out.p[(2, FIRST_BUMP + i)] = d[0][2] * ds;
            out.p[(3, FIRST_BUMP + i)] = d[1][2] * ds;
            let next_s = sk * c1 + ck * s1;
            ck = ck * c1 - sk * s1;
            sk = next_s;
        }
    }
}

/// The bumpy-ground system with `n_bumps` amplitude parameters.
pub fn system(n_bumps: usize) -> HybridSystem {
    let mut names: Vec<String> = ["g", "e", "mu"].iter().map(|s| s.to_string()).collect();
    names.extend((1..=n_bumps).map(|k| format!("a{k}")));
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    HybridSystem::builder(&["x", "y", "vx", "vy"], &names)
        .mode("flight", Flight)
        .transition(
            "impact",
            FromMode("flight"),
            ToMode("flight"),
            BumpyGround,
            BumpyImpact,
        )
        .build()
        .expect("the bumpy-ground system is well formed")
}

/// Parameters: `g = 9.81, e = 0.8, mu = 0.7, a_k = 0.3 / k`.
pub fn params(n_bumps: usize) -> Vec<f64> {
    let mut p = vec![9.81, 0.8, 0.7];
    p.extend((1..=n_bumps).map(|k| 0.3 / k as f64));
    p
}

/// The benchmarked run: from `(0, 1, 1, 0)` to `t_end = 2`, Dormand-Prince at
/// `rtol = atol = tol`.
pub fn problem(system: &HybridSystem, tol: f64) -> Problem<'_> {
    let n_bumps = system.param_dim() - FIRST_BUMP;
    Problem::new(system, vec![0.0, 1.0, 1.0, 0.0], params(n_bumps), 2.0)
        .with_solver(SolverChoice::dopri5(tol))
}
