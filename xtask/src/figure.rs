//! The three-ways figure: |error of d x(T)/d vy0| against dt, log-log, one
//! line per way, one panel per case; SVG or PNG by the file's extension.
//!
//! Text is drawn with an embedded subset of DejaVu Sans (`assets/`,
//! registered with plotters' `ab_glyph` backend), so neither format needs a
//! system font library.

use ia_verify::three_ways::{ThreeWaysPoint, Way, CASES};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::error::Error;
use std::path::Path;
use std::sync::Once;

/// Errors that are exactly zero are drawn at this floor.
pub const FLOOR: f64 = 1e-17;

const FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");
const FAMILY: &str = "sans-serif";
const SIZE: (u32, u32) = (1400, 620);

fn register_font() -> Result<(), String> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT)
            .map_err(|_| "the embedded font is not a valid OpenType font".to_string());
    });
    result
}

fn color(way: Way) -> RGBColor {
    match way {
        Way::NaiveTimeStepping => RGBColor(214, 39, 40),
        Way::InterpolatedCrossing => RGBColor(31, 119, 180),
        Way::ImpactAdjointRk4 => RGBColor(44, 160, 44),
        Way::ImpactAdjointDopri5 => RGBColor(0, 0, 0),
    }
}

fn legend(way: Way, case: &str) -> String {
    match way {
        Way::NaiveTimeStepping if case.contains("flat") => {
            format!("{} - value exactly 0", way.label())
        }
        Way::NaiveTimeStepping => format!("{} - nonzero, wrong", way.label()),
        _ => way.label().to_string(),
    }
}

/// Draws the figure into `path` (`.svg` or `.png`).
pub fn three_ways(path: &Path, points: &[ThreeWaysPoint]) -> Result<(), Box<dyn Error>> {
    register_font()?;
    match path.extension().and_then(|e| e.to_str()) {
        Some("svg") => draw(SVGBackend::new(path, SIZE).into_drawing_area(), points),
        Some("png") => draw(BitMapBackend::new(path, SIZE).into_drawing_area(), points),
        _ => Err(format!("unknown figure format: {}", path.display()).into()),
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    points: &[ThreeWaysPoint],
) -> Result<(), Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let root = root.titled(
        &format!("Error of d x(T)/d vy0 against dt (exact zeros drawn at the {FLOOR:.0e} floor)"),
        (FAMILY, 24),
    )?;
    let panels = root.split_evenly((1, CASES.len()));
    let dts: Vec<f64> = points.iter().map(|p| p.dt).collect();
    let dt_min = dts.iter().copied().fold(f64::INFINITY, f64::min);
    let dt_max = dts.iter().copied().fold(0.0, f64::max);
    let x_range = (dt_min / 2.0)..(dt_max * 2.0);
    for (panel, case) in panels.iter().zip(CASES) {
        let mut chart = ChartBuilder::on(panel)
            .caption(*case, (FAMILY, 20))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(x_range.clone().log_scale(), (FLOOR / 3.0..10.0).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("dt")
            .y_desc("|error|")
            .x_label_formatter(&|v| format!("{v:.0e}"))
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .label_style((FAMILY, 15))
            .axis_desc_style((FAMILY, 17))
            .draw()?;
        for way in Way::ALL {
            let mut series: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.case == *case && p.method == way)
                .map(|p| {
                    (
                        p.dt,
                        if p.abs_error > 0.0 {
                            p.abs_error.max(FLOOR)
                        } else {
                            FLOOR
                        },
                    )
                })
                .collect();
            series.sort_by(|a, b| a.0.total_cmp(&b.0));
            let c = color(way);
            chart
                .draw_series(LineSeries::new(series.clone(), c.stroke_width(2)))?
                .label(legend(way, case))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3))
                });
            chart.draw_series(
                series
                    .iter()
                    .map(|&(x, y)| Circle::new((x, y), 4, c.filled())),
            )?;
        }
        chart
            .configure_series_labels()
            .label_font((FAMILY, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::Coordinate(8, 250))
            .draw()?;
    }
    root.present()?;
    Ok(())
}
