//! The server's dynamic admission threshold (the layered-retries
//! write-up): a server holds at most `base_capacity × (1 − e²)` requests,
//! `e` the share of its answers over the window that were 5xx. Healthy, it
//! admits up to its base; failing, it admits quadratically fewer, so a
//! struggling server sheds harder exactly when retries would pile on. Over
//! the threshold a first attempt gets 429 with Retry-After and a retry a
//! connection reset.

use std::collections::VecDeque;

use sim_core::time::SimTime;

use crate::config::AdmissionConfig;

/// The threshold and the window of answers it is computed from.
#[derive(Clone, Debug)]
pub struct AdmissionThreshold {
    cfg: AdmissionConfig,
    /// Answers in the window, oldest first: (when, a 5xx).
    answers: VecDeque<(SimTime, bool)>,
    failed: u32,
}

impl AdmissionThreshold {
    /// A threshold at its base, with no answers seen.
    pub fn new(cfg: &AdmissionConfig) -> Self {
        AdmissionThreshold {
            cfg: cfg.clone(),
            answers: VecDeque::new(),
            failed: 0,
        }
    }

    /// The settings (`Retry-After`, base).
    pub fn config(&self) -> &AdmissionConfig {
        &self.cfg
    }

    /// Takes new settings, keeping the window's answers.
    pub fn reconfigure(&mut self, cfg: &AdmissionConfig) {
        self.cfg = cfg.clone();
    }

    /// The most requests to hold now.
    pub fn threshold(&mut self, now: SimTime) -> f64 {
        while let Some(&(t, bad)) = self.answers.front() {
            if now.saturating_since(t) < self.cfg.window {
                break;
            }
            self.answers.pop_front();
            self.failed -= u32::from(bad);
        }
        let e = match self.answers.len() {
            0 => 0.0,
            n => f64::from(self.failed) / n as f64,
        };
        f64::from(self.cfg.base_capacity) * (1.0 - e * e)
    }

    /// An answer the server gave; `failed` for a 5xx.
    pub fn record(&mut self, now: SimTime, failed: bool) {
        self.answers.push_back((now, failed));
        self.failed += u32::from(failed);
    }
}
