//! The rimless wheel's steady rolling speed and its Floquet multiplier
//! against the slope `gamma`, for two spoke angles, computed by Newton
//! shooting (points) and drawn over the closed forms (lines):
//!
//! ```text
//! omega* = cot(2 alpha) sqrt(4 (g/l) sin(alpha) sin(gamma)),   lambda = cos^2(2 alpha)
//! ```
//!
//! The multiplier does not depend on the slope: each step loses the same
//! fraction of the rate's deviation. The figure is written to
//! `<target>/orbits/rimless_wheel_slope.svg` and `.png` (`CARGO_TARGET_DIR`
//! or the workspace's `target/`).
//!
//! Run with `cargo run -p ia-orbits --example rimless_wheel_slope`.

use ia_orbits::{periodic_orbit, OrbitOptions};
use plotters::prelude::*;
use std::error::Error;
use std::path::{Path, PathBuf};

const G: f64 = 9.81;
const L: f64 = 1.0;
const FONT: &[u8] = include_bytes!("../../../xtask/assets/DejaVuSans-subset.ttf");
const FAMILY: &str = "sans-serif";

/// One computed orbit of the sweep.
#[derive(Clone, Copy, Debug)]
pub struct SlopePoint {
    /// Spoke half-angle.
    pub alpha: f64,
    /// Slope.
    pub gamma: f64,
    /// Steady speed just after a step, by Newton shooting.
    pub speed: f64,
    /// The nontrivial multiplier.
    pub multiplier: f64,
    /// `d speed / d gamma` by the implicit function theorem.
    pub dspeed_dgamma: f64,
}

/// The closed-form speed.
pub fn closed_form_speed(alpha: f64, gamma: f64) -> f64 {
    (4.0 * G / L * alpha.sin() * gamma.sin()).sqrt() / (2.0 * alpha).tan()
}

/// Orbits for each `alpha` at `steps` slopes in `[0.08, 0.3]`, each Newton
/// started from the previous orbit (continuation in `gamma`). On gentler
/// slopes the steady speed of `alpha = pi/8` is too low to vault over the
/// stance spoke (`omega*^2 < 2 (g/l) (1 - cos(alpha - gamma))`): there is no
/// rolling orbit, and Newton says so.
pub fn sweep(alphas: &[f64], steps: usize) -> Result<Vec<SlopePoint>, Box<dyn Error>> {
    let model = ia_models::by_name("rimless-wheel")?;
    let system = model.system();
    let options = OrbitOptions::new(10.0);
    let mut points = Vec::new();
    for &alpha in alphas {
        let mut speed = 1.5;
        for i in 0..steps {
            let gamma = 0.08 + 0.22 * i as f64 / (steps - 1) as f64;
            let params = [G, L, alpha, gamma];
            let orbit =
                periodic_orbit(&system, "step", &[gamma - alpha, speed], &params, &options)?;
            let nontrivial = orbit
                .multipliers
                .iter()
                .find(|m| !m.trivial)
                .ok_or("no nontrivial multiplier")?;
            let sens = orbit.sensitivities.as_ref().ok_or("no derivatives")?;
            speed = orbit.fixed_point[1];
            points.push(SlopePoint {
                alpha,
                gamma,
                speed,
                multiplier: nontrivial.re,
                dspeed_dgamma: sens.fixed_point[(1, 3)],
            });
        }
    }
    Ok(points)
}

/// Where the figure goes: `<CARGO_TARGET_DIR or <workspace>/target>/orbits/`.
pub fn figure_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("orbits").join("rimless_wheel_slope.svg")
}

/// Draws speed and multiplier against `gamma` into `path` (`.svg` or
/// `.png`).
pub fn draw(path: &Path, points: &[SlopePoint], alphas: &[f64]) -> Result<(), Box<dyn Error>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Registering twice (a test and main in one process) is harmless.
    let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    const SIZE: (u32, u32) = (1200, 520);
    match path.extension().and_then(|e| e.to_str()) {
        Some("svg") => draw_on(
            SVGBackend::new(path, SIZE).into_drawing_area(),
            points,
            alphas,
        ),
        Some("png") => draw_on(
            BitMapBackend::new(path, SIZE).into_drawing_area(),
            points,
            alphas,
        ),
        _ => Err(format!("unknown figure format: {}", path.display()).into()),
    }
}

fn draw_on<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    points: &[SlopePoint],
    alphas: &[f64],
) -> Result<(), Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let root = root.titled(
        "Rimless wheel: steady speed and Floquet multiplier against the slope",
        (FAMILY, 22),
    )?;
    let panels = root.split_evenly((1, 2));
    let colors = [RGBColor(31, 119, 180), RGBColor(214, 39, 40)];
    let fine: Vec<f64> = (0..=110).map(|i| 0.08 + 0.002 * i as f64).collect();
    let max_speed = points.iter().map(|p| p.speed).fold(0.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(&panels[0])
        .caption("speed just after a step, omega* (rad/s)", (FAMILY, 18))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(0.06..0.32, 0.0..max_speed)?;
    chart
        .configure_mesh()
        .x_desc("slope gamma (rad)")
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 15))
        .draw()?;
    for (&alpha, &c) in alphas.iter().zip(&colors) {
        let line = fine.iter().map(|&g| (g, closed_form_speed(alpha, g)));
        chart
            .draw_series(LineSeries::new(line, c.stroke_width(2)))?
            .label(format!(
                "alpha = {alpha:.3}: closed form (line), Newton (dots)"
            ))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
        chart.draw_series(
            points
                .iter()
                .filter(|p| p.alpha == alpha)
                .map(|p| Circle::new((p.gamma, p.speed), 4, c.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font((FAMILY, 13))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    let mut chart = ChartBuilder::on(&panels[1])
        .caption("nontrivial multiplier (stable below 1)", (FAMILY, 18))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(0.06..0.32, 0.0..1.0)?;
    chart
        .configure_mesh()
        .x_desc("slope gamma (rad)")
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 15))
        .draw()?;
    for (&alpha, &c) in alphas.iter().zip(&colors) {
        let lambda = (2.0 * alpha).cos().powi(2);
        chart
            .draw_series(LineSeries::new(
                fine.iter().map(|&g| (g, lambda)),
                c.stroke_width(2),
            ))?
            .label(format!("alpha = {alpha:.3}: cos^2(2 alpha) = {lambda:.3}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
        chart.draw_series(
            points
                .iter()
                .filter(|p| p.alpha == alpha)
                .map(|p| Circle::new((p.gamma, p.multiplier), 4, c.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font((FAMILY, 13))
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    root.present()?;
    Ok(())
}

/// The two spoke angles of the figure.
pub const ALPHAS: [f64; 2] = [std::f64::consts::FRAC_PI_8, 0.3];

#[allow(dead_code)] // the test includes this file as a module and calls `sweep` and `draw`
fn main() -> Result<(), Box<dyn Error>> {
    let points = sweep(&ALPHAS, 23)?;
    for p in &points {
        println!(
            "alpha {:.4} gamma {:.3}: omega* {:.9} (closed form {:.9}), multiplier {:.12}, d omega*/d gamma {:.6}",
            p.alpha,
            p.gamma,
            p.speed,
            closed_form_speed(p.alpha, p.gamma),
            p.multiplier,
            p.dspeed_dgamma
        );
    }
    let path = figure_path();
    draw(&path, &points, &ALPHAS)?;
    let png = path.with_extension("png");
    draw(&png, &points, &ALPHAS)?;
    println!("figures: {} and {}", path.display(), png.display());
    Ok(())
}
