//! layout: the result rows of W5 and W6 and redb's table layout for them (one row per
//! operation, one column per system), printed for people.

/// One measured figure.
#[derive(Clone, Debug)]
pub struct Figure {
    /// System name (`artdb`, `redb`, ...; `machine` for W5's fsync limit).
    pub system: String,
    /// Operation name as the issue spells it.
    pub op: String,
    /// The figure.
    pub value: f64,
    /// Its unit (`commits/s`, `s`, `bytes`, `ratio`).
    pub unit: String,
}

impl Figure {
    /// A figure.
    pub fn new(system: &str, op: &str, value: f64, unit: &str) -> Figure {
        Figure {
            system: system.into(),
            op: op.into(),
            value,
            unit: unit.into(),
        }
    }
}

/// Formats a value in its unit, compactly.
pub fn format_value(value: f64, unit: &str) -> String {
    match unit {
        "s" if value < 1e-3 => format!("{:.1}us", value * 1e6),
        "s" if value < 1.0 => format!("{:.1}ms", value * 1e3),
        "s" => format!("{value:.2}s"),
        "bytes" if value >= 1e9 => format!("{:.2}GiB", value / (1u64 << 30) as f64),
        "bytes" if value >= f64::from(1u32 << 20) => {
            format!("{:.1}MiB", value / f64::from(1u32 << 20))
        }
        "bytes" => format!("{:.1}KiB", value / 1024.0),
        "ratio" => format!("{value:.3}"),
        _ if value >= 100.0 => format!("{value:.0}"),
        _ => format!("{value:.2}"),
    }
}

/// Prints `figures` as one row per op (in first-seen order) and one column per system, with
/// each op's unit, and a star on the best system of each row (highest for rates and ratios,
/// lowest for times and sizes).
pub fn print(figures: &[Figure], systems: &[&str]) {
    let mut ops: Vec<&str> = Vec::new();
    for figure in figures {
        if !ops.contains(&figure.op.as_str()) {
            ops.push(&figure.op);
        }
    }
    let width = 14;
    let mut header = format!("{:<28}", "");
    for system in systems {
        header.push_str(&format!(" {system:>width$}"));
    }
    println!("\n{header}  unit");
    for op in ops {
        let row: Vec<Option<&Figure>> = systems
            .iter()
            .map(|s| figures.iter().find(|f| f.op == op && f.system == *s))
            .collect();
        let unit = row.iter().flatten().next().map_or("", |f| f.unit.as_str());
        let higher_is_better = !matches!(unit, "s" | "bytes") && !op.starts_with("abort");
        let best = row
            .iter()
            .flatten()
            .map(|f| f.value)
            .fold(None, |best: Option<f64>, v| match best {
                Some(b) if (higher_is_better && b >= v) || (!higher_is_better && b <= v) => Some(b),
                _ => Some(v),
            });
        let mut line = format!("{op:<28}");
        for cell in &row {
            let text = match cell {
                Some(f) => {
                    let star = if row.iter().flatten().count() > 1 && Some(f.value) == best {
                        "*"
                    } else {
                        ""
                    };
                    format!("{}{star}", format_value(f.value, &f.unit))
                }
                None => "-".to_string(),
            };
            line.push_str(&format!(" {text:>width$}"));
        }
        println!("{line}  {unit}");
    }
}
