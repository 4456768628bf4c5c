//! SVG charts with plotters: time series with wall-clock axes and timeline
//! markers, stacked areas, and heatmaps. Each returns the SVG text, ready
//! to inline in HTML or write as a file.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::full_palette::{
    BLUE_600, BROWN_500, GREEN_600, GREY_500, ORANGE_600, PINK_600, PURPLE_500, RED_600, TEAL_600,
};

/// Size of every chart, pixels.
pub const SIZE: (u32, u32) = (900, 320);

/// Colours in series order: nine, so that eight pod groups and a reference
/// line never share one.
pub const COLOURS: [RGBColor; 9] = [
    BLUE_600, RED_600, GREEN_600, ORANGE_600, PURPLE_500, TEAL_600, BROWN_500, PINK_600, GREY_500,
];

/// A named series of (x, y) points.
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points, x ascending.
    pub points: Vec<(f64, f64)>,
}

/// A vertical marker (a timeline action) with its label.
pub struct Marker {
    /// Where, on the x axis.
    pub x: f64,
    /// What, shortly.
    pub label: String,
}

/// Bins a drawn series' points are kept in: about two per pixel column
/// of the plotting area.
const BINS: usize = 1_000;

/// `points` (x ascending) as drawn, in runs of points whose y is finite:
/// a bucket without a value (a p99 of no request) breaks the line instead
/// of being bridged by it. Within a run, every point when the series has
/// few; else, of each of [`BINS`] equal spans of x, its lowest and its
/// highest point in their order, and the run's last, so a day of
/// one-second buckets draws as the same picture, its spikes and dips
/// included, in about 2,000 points instead of 86,400 (an SVG a browser
/// can open).
fn decimated(points: &[(f64, f64)]) -> Vec<Vec<(f64, f64)>> {
    let bin_of: Option<Box<dyn Fn(f64) -> usize>> = match (points.first(), points.last()) {
        (Some(&(x0, _)), Some(&(x1, _))) if points.len() > 2 * BINS => {
            let width = (x1 - x0).max(f64::MIN_POSITIVE);
            Some(Box::new(move |x: f64| {
                (((x - x0) / width * BINS as f64) as usize).min(BINS - 1)
            }))
        }
        _ => None,
    };
    let mut runs = Vec::new();
    let mut run: Vec<(f64, f64)> = Vec::new();
    let mut bin: Option<Bin> = None;
    let mut last = None;
    let close =
        |run: &mut Vec<(f64, f64)>, bin: &mut Option<Bin>, last: &mut Option<(f64, f64)>| {
            if let Some(b) = bin.take() {
                b.drawn(run);
            }
            if let Some(p) = last.take()
                && run.last() != Some(&p)
            {
                run.push(p);
            }
            std::mem::take(run)
        };
    for &p in points {
        if !p.1.is_finite() {
            let done = close(&mut run, &mut bin, &mut last);
            if !done.is_empty() {
                runs.push(done);
            }
            continue;
        }
        last = Some(p);
        let Some(bin_of) = &bin_of else {
            run.push(p);
            continue;
        };
        let index = bin_of(p.0);
        match &mut bin {
            Some(b) if b.index == index => b.take(p),
            _ => {
                if let Some(b) = bin.replace(Bin::new(index, p)) {
                    b.drawn(&mut run);
                }
            }
        }
    }
    let done = close(&mut run, &mut bin, &mut last);
    if !done.is_empty() {
        runs.push(done);
    }
    runs
}

/// One span of x in [`decimated`]: its lowest and highest point so far.
struct Bin {
    index: usize,
    low: (f64, f64),
    high: (f64, f64),
}

impl Bin {
    fn new(index: usize, p: (f64, f64)) -> Bin {
        Bin {
            index,
            low: p,
            high: p,
        }
    }

    fn take(&mut self, p: (f64, f64)) {
        if p.1 < self.low.1 {
            self.low = p;
        }
        if p.1 > self.high.1 {
            self.high = p;
        }
    }

    /// Appends its points to `out` in the order of x (one when they are
    /// the same point).
    fn drawn(self, out: &mut Vec<(f64, f64)>) {
        let (a, b) = if self.low.0 <= self.high.0 {
            (self.low, self.high)
        } else {
            (self.high, self.low)
        };
        out.push(a);
        if b != a {
            out.push(b);
        }
    }
}

fn bounds(series: &[Series]) -> (f64, f64, f64) {
    let mut x0 = f64::INFINITY;
    let mut x1 = f64::NEG_INFINITY;
    let mut y1: f64 = 0.0;
    for s in series {
        for &(x, y) in &s.points {
            x0 = x0.min(x);
            x1 = x1.max(x);
            if y.is_finite() {
                y1 = y1.max(y);
            }
        }
    }
    if !x0.is_finite() {
        (0.0, 1.0, 1.0)
    } else {
        (x0, x1.max(x0 + 1.0), if y1 > 0.0 { y1 * 1.08 } else { 1.0 })
    }
}

type TimeChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The frame every time chart shares: caption, axes sized to `series`,
/// wall-clock labels under the x axis. Returns the chart and its y top.
fn time_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    x_label_of: &dyn Fn(f64) -> String,
) -> Result<(TimeChart<'a, 'b>, f64), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (x0, x1, y1) = bounds(series);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_labels(8)
        .x_label_formatter(&|x| x_label_of(*x))
        .draw()
        .map_err(|e| e.to_string())?;
    Ok((chart, y1))
}

/// Width of the legend panel right of the plotting area: legends never sit
/// on the data.
const LEGEND_WIDTH: u32 = 190;

/// The plotting area and the legend panel of a chart of `size`.
fn with_legend_panel<'b>(
    root: DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    entries: usize,
) -> (
    DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    Option<DrawingArea<SVGBackend<'b>, plotters::coord::Shift>>,
) {
    if entries == 0 {
        return (root, None);
    }
    let (w, _) = root.dim_in_pixel();
    let (plot, panel) = root.split_horizontally(w.saturating_sub(LEGEND_WIDTH));
    (plot, Some(panel))
}

/// How a series is drawn, and its legend's swatch.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Swatch {
    /// A line.
    Line,
    /// A dashed line: the series after the palette's nine colours, which
    /// reuse them.
    Dashed,
    /// A filled area.
    Area,
}

impl Swatch {
    /// The swatch of line series `i`.
    fn of_line(i: usize) -> Swatch {
        if i < COLOURS.len() {
            Swatch::Line
        } else {
            Swatch::Dashed
        }
    }
}

/// Draws the legend in its panel: a swatch and the series' name per line,
/// names cut to fit.
fn side_legend(
    panel: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    entries: &[(String, RGBColor, Swatch)],
) -> Result<(), String> {
    panel.fill(&WHITE).map_err(|e| e.to_string())?;
    for (i, (name, colour, swatch)) in entries.iter().enumerate() {
        let y = 40 + 18 * i as i32;
        match swatch {
            Swatch::Area => panel
                .draw(&Rectangle::new([(6, y - 5), (20, y + 5)], colour.filled()))
                .map_err(|e| e.to_string())?,
            Swatch::Line => panel
                .draw(&PathElement::new(
                    vec![(4, y), (22, y)],
                    colour.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?,
            Swatch::Dashed => panel
                .draw(&plotters::element::DashedPathElement::new(
                    vec![(4, y), (22, y)],
                    5,
                    3,
                    colour.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?,
        }
        let text: String = if name.chars().count() > 26 {
            name.chars().take(25).collect::<String>() + "…"
        } else {
            name.clone()
        };
        panel
            .draw(&Text::new(text, (28, y - 6), ("sans-serif", 12)))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Where the markers' labels go: each on the first line down from the top
/// where it does not run into a label before it (a restore 90 s after a
/// change wrote over the change's label), on at most [`LABEL_LINES`]
/// lines: a label with no room left is not written (its marker is still
/// drawn), so labels never cover the data.
#[derive(Default)]
struct LabelRows {
    /// Where each line's last label ends, pixels.
    ends: Vec<i32>,
}

/// Lines the markers' labels may take under the top of a chart.
const LABEL_LINES: usize = 3;

impl LabelRows {
    /// The line of a label starting at pixel `left`, `chars` long (11 px
    /// sans-serif: about 6 px a character); `None` when no line has room.
    fn place(&mut self, left: i32, chars: usize) -> Option<usize> {
        let right = left + 6 * chars as i32 + 4;
        let row = match self.ends.iter().position(|&end| end <= left) {
            Some(r) => r,
            None if self.ends.len() < LABEL_LINES => {
                self.ends.push(i32::MIN);
                self.ends.len() - 1
            }
            None => return None,
        };
        self.ends[row] = right;
        Some(row)
    }
}

/// A line chart over time; `x_label_of` turns an x value into its axis
/// label (a wall-clock time).
pub fn lines(
    title: &str,
    y_desc: &str,
    series: &[Series],
    markers: &[Marker],
    x_label_of: &dyn Fn(f64) -> String,
) -> Result<String, String> {
    lines_over(title, "time", y_desc, series, markers, x_label_of)
}

/// [`lines`] over another x axis, named `x_desc`.
pub fn lines_over(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    markers: &[Marker],
    x_label_of: &dyn Fn(f64) -> String,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let full = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        full.fill(&WHITE).map_err(|e| e.to_string())?;
        let (root, panel) = with_legend_panel(full.clone(), series.len());
        let (mut chart, y1) = time_chart(&root, title, x_desc, y_desc, series, x_label_of)?;
        let (_, plot_h) = chart.plotting_area().dim_in_pixel();
        let line_h = y1 * 13.0 / f64::from(plot_h.max(1));
        let mut rows = LabelRows::default();
        let mut in_order: Vec<&Marker> = markers.iter().collect();
        in_order.sort_by(|a, b| a.x.total_cmp(&b.x));
        for m in in_order {
            chart
                .draw_series(LineSeries::new(
                    vec![(m.x, 0.0), (m.x, y1)],
                    GREY_500.stroke_width(1),
                ))
                .map_err(|e| e.to_string())?;
            let (left, _) = chart.backend_coord(&(m.x, y1));
            let Some(row) = rows.place(left, m.label.chars().count()) else {
                continue;
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    m.label.clone(),
                    (m.x, y1 * 0.97 - row as f64 * line_h),
                    ("sans-serif", 11),
                )))
                .map_err(|e| e.to_string())?;
        }
        for (i, s) in series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            for run in decimated(&s.points) {
                // A value alone between gaps is a dot, not nothing.
                if let [p] = run[..] {
                    chart
                        .draw_series(std::iter::once(Circle::new(p, 2, colour.filled())))
                        .map_err(|e| e.to_string())?;
                    continue;
                }
                let style = colour.stroke_width(2);
                match Swatch::of_line(i) {
                    Swatch::Dashed => chart
                        .draw_series(DashedLineSeries::new(run, 6, 4, style))
                        .map_err(|e| e.to_string())?,
                    _ => chart
                        .draw_series(LineSeries::new(run, style))
                        .map_err(|e| e.to_string())?,
                };
            }
        }
        if let Some(panel) = &panel {
            let entries: Vec<(String, RGBColor, Swatch)> = series
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    (
                        s.name.clone(),
                        COLOURS[i % COLOURS.len()],
                        Swatch::of_line(i),
                    )
                })
                .collect();
            side_legend(panel, &entries)?;
        }
        full.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Stacked areas over time (outcomes by reason): each series is drawn on
/// top of the ones before it.
pub fn stacked(
    title: &str,
    y_desc: &str,
    series: &[Series],
    x_label_of: &dyn Fn(f64) -> String,
) -> Result<String, String> {
    let n = series.first().map_or(0, |s| s.points.len());
    let mut cumulative: Vec<Series> = Vec::new();
    let mut base = vec![0.0; n];
    for s in series {
        let points: Vec<(f64, f64)> = s
            .points
            .iter()
            .enumerate()
            .map(|(i, &(x, y))| {
                base[i] += y;
                (x, base[i])
            })
            .collect();
        cumulative.push(Series {
            name: s.name.clone(),
            points,
        });
    }
    let mut svg = String::new();
    {
        let full = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        full.fill(&WHITE).map_err(|e| e.to_string())?;
        let (root, panel) = with_legend_panel(full.clone(), cumulative.len());
        let (mut chart, _) = time_chart(&root, title, "time", y_desc, &cumulative, x_label_of)?;
        // Top layer first so lower layers paint over it.
        for (i, s) in cumulative.iter().enumerate().rev() {
            let colour = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(
                    AreaSeries::new(
                        decimated(&s.points).into_iter().flatten(),
                        0.0,
                        colour.mix(0.6),
                    )
                    .border_style(colour),
                )
                .map_err(|e| e.to_string())?;
        }
        if let Some(panel) = &panel {
            let entries: Vec<(String, RGBColor, Swatch)> = cumulative
                .iter()
                .enumerate()
                .map(|(i, s)| (s.name.clone(), COLOURS[i % COLOURS.len()], Swatch::Area))
                .collect();
            side_legend(panel, &entries)?;
        }
        full.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// A heatmap: `values[y][x]`, `None` for an empty cell; cells drawn in a
/// white-to-red scale between the smallest and largest value, each
/// labelled with its value.
pub fn heatmap(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    x_ticks: &[String],
    y_ticks: &[String],
    values: &[Vec<Option<f64>>],
    format: &dyn Fn(f64) -> String,
) -> Result<String, String> {
    let mut svg = String::new();
    let all: Vec<f64> = values.iter().flatten().flatten().copied().collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    {
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (nx, ny) = (x_ticks.len().max(1), y_ticks.len().max(1));
        // Cell (i, j) spans [i − ½, i + ½] so that integer ticks sit at
        // cell centres.
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(90)
            .build_cartesian_2d(-0.5..nx as f64 - 0.5, -0.5..ny as f64 - 0.5)
            .map_err(|e| e.to_string())?;
        let tick = |ticks: &[String], v: f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                ticks.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            // At most as many labels as fit side by side (a sweep of 191
            // timeouts labels about every 20th).
            .x_labels(nx.min(12))
            .y_labels(ny.min(16))
            .x_label_formatter(&|v| tick(x_ticks, *v))
            .y_label_formatter(&|v| tick(y_ticks, *v))
            .draw()
            .map_err(|e| e.to_string())?;
        // Each cell's value and border only where a cell has room for
        // them: small cells are colour alone, and the scale's ends are
        // written under the title instead.
        let (w, h) = chart.plotting_area().dim_in_pixel();
        let (cell_w, cell_h) = (w as f64 / nx as f64, h as f64 / ny as f64);
        let (labelled, bordered) = (
            cell_w >= 40.0 && cell_h >= 16.0,
            cell_w >= 6.0 && cell_h >= 6.0,
        );
        if !labelled && lo.is_finite() {
            let scale = if hi > lo {
                format!("white {}, red {}", format(lo), format(hi))
            } else {
                format!("every cell {}", format(lo))
            };
            root.draw(&Text::new(
                scale,
                (SIZE.0 as i32 - 190, 14),
                ("sans-serif", 12),
            ))
            .map_err(|e| e.to_string())?;
        }
        for (yi, row) in values.iter().enumerate() {
            for (xi, v) in row.iter().enumerate() {
                let Some(v) = *v else { continue };
                let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
                let colour = RGBColor(
                    255,
                    (235.0 * (1.0 - t)) as u8 + 20,
                    (235.0 * (1.0 - t)) as u8 + 20,
                );
                let (x, y) = (xi as f64, yi as f64);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                        colour.filled(),
                    )))
                    .map_err(|e| e.to_string())?;
                if bordered {
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                            GREY_500.stroke_width(1),
                        )))
                        .map_err(|e| e.to_string())?;
                }
                if labelled {
                    chart
                        .draw_series(std::iter::once(Text::new(
                            format(v),
                            (x - 0.1, y + 0.1),
                            ("sans-serif", 13),
                        )))
                        .map_err(|e| e.to_string())?;
                }
            }
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// A tipping boundary: trigger magnitude across, duration up; the edge as
/// a line, its 95 % band shaded, and every judged point as a dot coloured
/// by its storm probability (blue: none of the seeds stormed, red: all).
pub fn boundary(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    b: &crate::boundary::Boundary,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let xs: Vec<f64> = b.points.iter().map(|p| p.magnitude).collect();
        let ys: Vec<f64> = b.points.iter().map(|p| p.duration.as_secs_f64()).collect();
        let (x0, x1) = xs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, z), &x| {
                (a.min(x), z.max(x))
            });
        // Durations span orders of magnitude (100 ms .. minutes): a log
        // axis keeps the edge readable.
        let y0 = ys.iter().copied().fold(f64::INFINITY, f64::min);
        let y0 = if y0.is_finite() && y0 > 0.0 {
            y0 / 1.3
        } else {
            0.01
        };
        let y1 = ys.iter().copied().fold(0.0, f64::max).max(y0 * 10.0) * 1.3;
        let (x0, x1) = if x0.is_finite() && x1 > x0 {
            let pad = (x1 - x0) * 0.05;
            (x0 - pad, x1 + pad)
        } else if x0.is_finite() {
            (x0 - 1.0, x0 + 1.0)
        } else {
            (0.0, 1.0)
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(format!("{y_desc} (s)"))
            .draw()
            .map_err(|e| e.to_string())?;
        // The band: where the seeds disagree, from the longest surely calm
        // duration to the shortest surely stormy one (the range's ends
        // where a side was never reached).
        let lo = |e: &crate::boundary::Edge| e.band_low.map_or(y0, |d| d.as_secs_f64());
        let hi = |e: &crate::boundary::Edge| e.band_high.map_or(y1, |d| d.as_secs_f64());
        let found: Vec<&crate::boundary::Edge> =
            b.edges.iter().filter(|e| e.duration.is_some()).collect();
        if found.len() >= 2 {
            let mut poly: Vec<(f64, f64)> = found.iter().map(|e| (e.magnitude, hi(e))).collect();
            poly.extend(found.iter().rev().map(|e| (e.magnitude, lo(e))));
            chart
                .draw_series(std::iter::once(Polygon::new(
                    poly,
                    RED_600.mix(0.15).filled(),
                )))
                .map_err(|e| e.to_string())?;
        }
        for e in &found {
            chart
                .draw_series(LineSeries::new(
                    vec![(e.magnitude, lo(e)), (e.magnitude, hi(e))],
                    RED_600.mix(0.5).stroke_width(6),
                ))
                .map_err(|e| e.to_string())?;
        }
        chart
            .draw_series(LineSeries::new(
                found
                    .iter()
                    .filter_map(|e| e.duration.map(|d| (e.magnitude, d.as_secs_f64()))),
                RED_600.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label("storm probability crosses 50 %")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RED_600.stroke_width(2)));
        for p in &b.points {
            let t = p.probability();
            let colour = RGBColor((30.0 + 200.0 * t) as u8, 60, (230.0 - 200.0 * t) as u8);
            chart
                .draw_series(std::iter::once(Circle::new(
                    (p.magnitude, p.duration.as_secs_f64()),
                    4,
                    colour.filled(),
                )))
                .map_err(|e| e.to_string())?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperMiddle)
            .background_style(WHITE.mix(0.9))
            .border_style(GREY_500)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A heatmap of many cells labels some ticks and colours its cells
    /// (the scale's ends written once); one of few cells writes each
    /// cell's value.
    #[test]
    fn a_heatmap_writes_values_only_in_cells_with_room_for_them() {
        let heat = |nx: usize, ny: usize| {
            let xs: Vec<String> = (0..nx).map(|i| format!("x{i}")).collect();
            let ys: Vec<String> = (0..ny).map(|i| format!("y{i}")).collect();
            let values: Vec<Vec<Option<f64>>> = (0..ny)
                .map(|j| (0..nx).map(|i| Some((i * ny + j) as f64)).collect())
                .collect();
            heatmap("t", "x", "y", &xs, &ys, &values, &|v| format!("v{v:.0}")).unwrap()
        };
        // plotters writes each text's content on a line of its own.
        let texts = |svg: &str, prefix: &str| {
            svg.lines()
                .filter_map(|l| l.trim().strip_prefix(prefix))
                .filter(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()))
                .count()
        };
        let small = heat(3, 3);
        assert_eq!(texts(&small, "v"), 9, "{small}");
        let large = heat(4, 191);
        assert!(texts(&large, "y") <= 16, "{} y labels", texts(&large, "y"));
        assert_eq!(texts(&large, "v"), 0, "values written in tiny cells");
        assert!(large.contains("white v0, red v763"), "no scale");
    }

    #[test]
    fn marker_labels_that_would_overlap_go_on_the_next_line() {
        let mut rows = LabelRows::default();
        assert_eq!(rows.place(100, 20), Some(0));
        assert_eq!(rows.place(150, 20), Some(1), "overlaps the first");
        assert_eq!(rows.place(200, 5), Some(2), "overlaps both");
        assert_eq!(rows.place(210, 5), None, "no fourth line");
        assert_eq!(rows.place(300, 5), Some(0), "clear of the first");
        assert_eq!(rows.place(900, 5), Some(0));
    }

    /// Lines past the palette's nine colours are dashed, in the chart and
    /// in the legend, so twelve runs compared stay twelve.
    #[test]
    fn lines_past_the_palette_are_dashed() {
        let series: Vec<Series> = (0..12)
            .map(|i| Series {
                name: format!("run {i}"),
                points: vec![(0.0, i as f64), (1.0, i as f64 + 1.0)],
            })
            .collect();
        // Each dash is a polyline of its own in the series' colour; the
        // first series' line and swatch are two more in the same colour.
        let first = COLOURS[0];
        let colour = format!("stroke=\"#{:02X}{:02X}{:02X}\"", first.0, first.1, first.2);
        let strokes = |svg: &str| {
            svg.lines()
                .filter(|l| l.starts_with("<polyline") && l.contains(&colour))
                .count()
        };
        let svg = lines("t", "y", &series, &[], &|x| format!("{x}")).unwrap();
        assert!(strokes(&svg) > 10, "the tenth line is not dashed: {svg}");
        assert_eq!(Swatch::of_line(8), Swatch::Line);
        assert_eq!(Swatch::of_line(9), Swatch::Dashed);
        let few = lines("t", "y", &series[..9], &[], &|x| format!("{x}")).unwrap();
        assert_eq!(strokes(&few), 2, "nine lines need no dashes");
    }

    #[test]
    fn few_points_are_drawn_as_they_are() {
        let points = vec![(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)];
        assert_eq!(decimated(&points), vec![points.clone()]);
    }

    #[test]
    fn a_value_missing_breaks_the_line() {
        let points = vec![(0.0, 1.0), (1.0, 2.0), (2.0, f64::NAN), (3.0, 3.0)];
        assert_eq!(
            decimated(&points),
            vec![vec![(0.0, 1.0), (1.0, 2.0)], vec![(3.0, 3.0)]]
        );
        // Decimated too: the gap stays a gap.
        let mut long: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 1.0)).collect();
        for p in &mut long[4_000..6_000] {
            p.1 = f64::NAN;
        }
        let runs = decimated(&long);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].last(), Some(&(3_999.0, 1.0)));
        assert_eq!(runs[1].first(), Some(&(6_000.0, 1.0)));
        assert_eq!(runs[1].last(), Some(&(9_999.0, 1.0)));
    }

    #[test]
    fn a_day_of_seconds_keeps_its_spike_and_dip_in_two_points_a_bin() {
        let mut points: Vec<(f64, f64)> = (0..86_400).map(|i| (i as f64, 10.0)).collect();
        points[40_000].1 = 95.0; // one second's spike
        points[70_001].1 = 0.5; // one second's dip
        let drawn = decimated(&points).concat();
        assert!(drawn.len() <= 2 * BINS, "{} points", drawn.len());
        assert!(drawn.contains(&(40_000.0, 95.0)), "the spike is lost");
        assert!(drawn.contains(&(70_001.0, 0.5)), "the dip is lost");
        assert!(drawn.windows(2).all(|w| w[0].0 < w[1].0), "x goes back");
        assert_eq!(drawn.first(), Some(&(0.0, 10.0)));
        assert_eq!(drawn.last(), Some(&(86_399.0, 10.0)));
        let ys: Vec<f64> = drawn.iter().map(|p| p.1).collect();
        assert!(ys.iter().all(|&y| y == 10.0 || y == 95.0 || y == 0.5));
    }
}
