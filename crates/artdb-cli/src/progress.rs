//! Progress bars of the long-running subcommands (load, import, export, dump, restore, backup,
//! compact, verify): drawn on standard error, and only when standard error is a terminal, so
//! pipes, scripts and `--json` output never see them.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A bar counting bytes up to `total`.
pub fn bytes(total: u64) -> ProgressBar {
    styled(
        total,
        "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    )
}

/// A bar counting items (pairs, keys) up to `total`, described by `what`.
pub fn items(total: u64, what: &str) -> ProgressBar {
    let template =
        format!("{{bar:40}} {{human_pos}}/{{human_len}} {what}, {{elapsed}} elapsed, eta {{eta}}");
    styled(total, &template)
}

/// A spinner (work of unknown length) showing `what`.
pub fn spinner(what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_message(what.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

fn styled(total: u64, template: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}
