//! The closed form both planar balls share (`ball2d-flat`, `ball2d-bowl`):
//! ballistic flight, impacts on the ground `y = 0` or `y = c x^2`.

use super::common::{
    check_accumulation, check_finite, check_len, cst, invalid, re, smallest_positive_root,
    transversality, Events,
};
use super::error::ClosedFormError;
use super::model::ClosedFormModel;
use super::solution::Trace;
use ia_core::Scalar;

/// Which ground a planar ball's parameter `p[2]` describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Surface {
    /// `y = 0`, `p[2] = mu`.
    Flat,
    /// `y = c x^2`, `p[2] = c`.
    Bowl,
}

/// The ground of the planar ball, as the closed form sees it.
#[derive(Clone, Copy)]
enum Ground<S> {
    /// `y = 0`; reset `vx <- mu vx`, `vy <- -e vy`.
    Flat { mu: S },
    /// `y = c x^2`; reset `v <- v - (1 + e)(v.n) n`.
    Bowl { c: S },
}

/// Shared closed form of the planar ball on a flat floor or in a bowl.
pub(super) fn planar_ball<S: Scalar>(
    spec: &'static ClosedFormModel,
    surface: Surface,
    x0: &[S],
    p: &[S],
    t_end: f64,
    max_events: usize,
) -> Result<Trace<S>, ClosedFormError> {
    check_len(spec, x0, p, t_end)?;
    check_finite(spec, x0, p)?;
    let (g, e) = (p[0], p[1]);
    let ground = match surface {
        Surface::Bowl => Ground::Bowl { c: p[2] },
        Surface::Flat => Ground::Flat { mu: p[2] },
    };
    if !(re(g) > 0.0) {
        return Err(invalid(spec, format!("g = {} must be > 0", re(g))));
    }
    if !(re(e) >= 0.0) {
        return Err(invalid(spec, format!("e = {} must be >= 0", re(e))));
    }
    let c = match ground {
        Ground::Bowl { c } => c,
        Ground::Flat { .. } => cst(0.0),
    };
    let (mut x, mut y, mut vx, mut vy) = (x0[0], x0[1], x0[2], x0[3]);
    // Guard along a flight from (x, y, vx, vy):
    // G(s) = (y + vy s - g s^2/2) - c (x + vx s)^2 = a s^2 + b s + gap.
    let gap = y - c * x * x;
    if re(gap) < 0.0 {
        return Err(invalid(
            spec,
            "the ball starts below the ground".to_string(),
        ));
    }
    if re(gap) == 0.0 && re(vy - c * x * vx * 2.0) <= 0.0 {
        return Err(ClosedFormError::InitialOnGuard {
            model: spec.name,
            guard_rate: re(vy - c * x * vx * 2.0),
        });
    }
    let mut events = Events::new(spec, max_events);
    let mut t: S = cst(0.0);
    let mut on_ground = false;
    loop {
        let a = -(g * 0.5 + c * vx * vx);
        let b = vy - c * x * vx * 2.0;
        let s = if on_ground {
            // gap == 0 identically: G(s) = s (a s + b); the next root is -b/a.
            if !(re(b) > 0.0) {
                return Err(ClosedFormError::Grazing {
                    model: spec.name,
                    event: events.times.len(),
                    time: re(t),
                    guard_rate: re(b),
                    transversality: 0.0,
                });
            }
            if re(a) < 0.0 {
                -b / a
            } else {
                break;
            }
        } else {
            match smallest_positive_root(a, b, gap) {
                Some(s) => s,
                None => break,
            }
        };
        let t_hit = t + s;
        if re(t_hit) >= t_end {
            break;
        }
        let x_hit = x + vx * s;
        let vy_minus = vy - g * s;
        // Guard rate d/dt (y - c x^2) = vy - 2 c x vx, equal to 2 a s + b.
        let slope = c * x_hit * 2.0;
        let rate = vy_minus - slope * vx;
        let cosine = transversality(
            re(rate),
            &[-re(slope), 1.0, 0.0, 0.0],
            &[re(vx), re(vy_minus), 0.0, -re(g)],
        );
        events.push(t_hit, -re(rate), cosine)?;
        match ground {
            Ground::Flat { mu } => {
                vx = mu * vx;
                vy = -e * vy_minus;
            }
            Ground::Bowl { .. } => {
                // n = (-m, 1)/sqrt(1 + m^2), m = 2 c x; v.n sqrt(1 + m^2) = vy - m vx.
                // v+ = v - (1 + e)(v.n) n, without the square root:
                let k = (e + 1.0) * rate / (slope * slope + 1.0);
                vx += k * slope;
                vy = vy_minus - k;
            }
        }
        x = x_hit;
        y = c * x_hit * x_hit;
        t = t_hit;
        on_ground = true;
        if let Ground::Flat { .. } = ground {
            check_accumulation(spec, &events, t, vy, g, e, t_end)?;
        }
    }
    let tau = cst::<S>(t_end) - t;
    Ok(Trace {
        final_state: vec![
            x + vx * tau,
            y + vy * tau - g * tau * tau * 0.5,
            vx,
            vy - g * tau,
        ],
        event_times: events.times,
        final_mode: None,
    })
}
