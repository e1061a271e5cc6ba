//! The fillsync phase: single writes, each made durable before the next, run in rounds that
//! visit every engine in a rotated order (see the bin's doc comment for why).
//!
//! Parent side: [`run`] starts the engines' children one after another; each runs its phases
//! up to readseq and answers `ready`, then waits with its database open. The parent then
//! drives the rounds over their stdin — `round K`: the child makes K synced writes and
//! answers `round K seconds` — one child at a time, and at last sends `end` to each in
//! turn: that child prints its fillsync notes and goes on with the rest of its phases
//! (fillrandom) while the others wait.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use crate::child::{key, Rng};
use crate::engines::Kv;
use crate::notes::{disk_note, disk_stat, latency_note};
use crate::report::Results;

/// Rounds of the phase unless `--sync-rounds` says otherwise.
pub const DEFAULT_ROUNDS: u64 = 20;

/// The fillsync phase's synced writes at `n` entries: N/1000, at least 1,000, for every
/// engine alike. Each write waits for the device's cache flush (~90 µs on a quiet run of the
/// reference VM, whose disk has a write-back cache and no FUA), and that flush's time varies;
/// with 100 writes (10^5 before session 15, a ~9 ms phase) one slow flush moved an engine's
/// row by 10%, so engines with the same flush per write swapped places from run to run.
pub fn writes(n: u64) -> u64 {
    (n / 1000).max(1000)
}

/// The writes of round `r` of `rounds` when an engine makes `total` in all: the rounds
/// differ by at most one write and add up to `total`.
fn round_writes(total: u64, r: u64, rounds: u64) -> u64 {
    total * (r + 1) / rounds - total * r / rounds
}

/// One engine's synced writes, possibly over several rounds: keys after the loaded ones,
/// every write's latency, and the device's counters summed over the rounds.
pub struct Writer {
    db: Box<dyn Kv>,
    next: u64,
    lat: Vec<f64>,
    stat: Option<PathBuf>,
    disk: Option<[u64; 3]>,
}

impl Writer {
    /// Writes into `db` from key `first` on (`LSM_BENCH_DISKSTAT` read once here).
    pub fn new(db: Box<dyn Kv>, first: u64) -> Writer {
        let stat = std::env::var_os("LSM_BENCH_DISKSTAT").map(PathBuf::from);
        let disk = stat.as_ref().map(|_| [0; 3]);
        Writer {
            db,
            next: first,
            lat: Vec::new(),
            stat,
            disk,
        }
    }

    /// Makes `k` synced writes of values from `rng`; returns the seconds they took.
    pub fn round(&mut self, rng: &mut Rng, k: u64) -> f64 {
        let before = self.stat.as_deref().and_then(disk_stat);
        let t = Instant::now();
        for _ in 0..k {
            let v = rng.value();
            let w = Instant::now();
            self.db.put_sync(&key(self.next), &v);
            self.lat.push(w.elapsed().as_secs_f64() * 1e6);
            self.next += 1;
        }
        let secs = t.elapsed().as_secs_f64();
        let after = self.stat.as_deref().and_then(disk_stat);
        self.disk = match (self.disk, before, after) {
            (Some(sum), Some(b), Some(a)) => {
                Some(std::array::from_fn(|i| sum[i] + a[i].saturating_sub(b[i])))
            }
            _ => None,
        };
        secs
    }

    /// Prints the `note` lines: the latency spread, and the device's work per write when
    /// `LSM_BENCH_DISKSTAT` named a readable file (counted during this engine's rounds only).
    pub fn print_notes(&self) {
        println!("note {}", latency_note(&self.lat));
        if let Some(d) = self.disk {
            println!("note {}", disk_note(&[0; 3], &d, self.lat.len() as u64));
        }
    }
}

/// The child's side of the rounds: runs the `round K` commands read from stdin until `end`
/// or the end of input.
pub fn serve(w: &mut Writer, rng: &mut Rng) {
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("read the parent's command");
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[..] {
            ["round", k] => {
                let k: u64 = k.parse().expect("round K");
                let secs = w.round(rng, k);
                println!("round {k} {secs}");
            }
            ["end"] => break,
            _ => panic!("unknown command {line:?}"),
        }
    }
}

/// A running engine child, paused after readseq or running rounds, and what it reported.
struct Running {
    name: String,
    child: Child,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
    /// `phase -> (ops, seconds)` and `note` lines read so far.
    phases: BTreeMap<String, (u64, f64)>,
    notes: Vec<String>,
    /// Seconds the child spent on its own phases (not waiting, not in rounds).
    wall: f64,
    /// CPU seconds the child used while it waited and another engine ran its phases.
    idle_cpu: f64,
    /// Synced writes in all, done so far, and the seconds they took.
    total: u64,
    done: u64,
    secs: f64,
    /// Writes per second in each round (`None`: no write in that round).
    rates: Vec<Option<f64>>,
}

impl Running {
    /// Starts `e`'s child and reads its output up to `ready`.
    fn start(exe: &Path, e: &str, n: u64, cache: usize, base: &Path) -> Result<Running, String> {
        let t = Instant::now();
        let mut child = Command::new(exe)
            .args(["--child", e, "--n", &n.to_string(), "--serve-fillsync"])
            .args(["--cache-mb", &(cache >> 20).to_string()])
            .arg("--dir")
            .arg(base)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|err| format!("spawn: {err}"))?;
        let (Some(stdin), Some(out)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("no pipes".into());
        };
        let mut r = Running {
            name: e.to_string(),
            child,
            stdin,
            out: BufReader::new(out),
            phases: BTreeMap::new(),
            notes: Vec::new(),
            wall: 0.0,
            idle_cpu: 0.0,
            total: writes(n),
            done: 0,
            secs: 0.0,
            rates: Vec::new(),
        };
        loop {
            match r.line() {
                Ok(l) if l == "ready" => break,
                Ok(l) => r.absorb(&l),
                Err(err) => {
                    let _ = r.child.wait();
                    return Err(err);
                }
            }
        }
        r.wall += t.elapsed().as_secs_f64();
        Ok(r)
    }

    /// One line of the child's stdout, without its newline; an error at its end.
    fn line(&mut self) -> Result<String, String> {
        let mut s = String::new();
        match self.out.read_line(&mut s) {
            Ok(0) => Err("child ended".into()),
            Ok(_) => Ok(s.trim_end().to_string()),
            Err(err) => Err(format!("read: {err}")),
        }
    }

    /// Keeps a `note ...` or `phase ops seconds` line.
    fn absorb(&mut self, line: &str) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.first() == Some(&"note") {
            self.notes
                .push(format!("{}: {}", self.name, parts[1..].join(" ")));
        } else if let [phase, ops, secs] = parts[..] {
            self.phases.insert(
                phase.to_string(),
                (ops.parse().unwrap_or(0), secs.parse().unwrap_or(0.0)),
            );
        }
    }

    /// The child's CPU time so far (utime + stime of `/proc/<pid>/stat`, USER_HZ = 100).
    fn cpu(&self) -> f64 {
        let Ok(s) = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())) else {
            return 0.0;
        };
        let Some((_, rest)) = s.rsplit_once(')') else {
            return 0.0;
        };
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        (f.get(11).unwrap_or(&0) + f.get(12).unwrap_or(&0)) as f64 / 100.0
    }

    /// Runs round `r` of `rounds` in this child.
    fn round(&mut self, r: u64, rounds: u64) -> Result<(), String> {
        let k = round_writes(self.total, r, rounds);
        if k == 0 {
            self.rates.push(None);
            return Ok(());
        }
        writeln!(self.stdin, "round {k}").map_err(|err| format!("write: {err}"))?;
        let line = self.line()?;
        let secs: f64 = match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["round", got, secs] if got == k.to_string() => {
                secs.parse().map_err(|_| format!("bad answer {line:?}"))?
            }
            _ => return Err(format!("bad answer {line:?}")),
        };
        self.done += k;
        self.secs += secs;
        self.rates.push((secs > 0.0).then(|| k as f64 / secs));
        Ok(())
    }

    /// Ends the rounds: the child prints its fillsync notes and runs its remaining phases;
    /// reads its output to the end and waits for it.
    fn finish(&mut self) -> Result<(), String> {
        let t = Instant::now();
        writeln!(self.stdin, "end").map_err(|err| format!("write: {err}"))?;
        while let Ok(line) = self.line() {
            self.absorb(&line);
        }
        let status = self.child.wait().map_err(|err| format!("wait: {err}"))?;
        self.wall += t.elapsed().as_secs_f64();
        if !status.success() {
            return Err(format!("exited with {status}"));
        }
        if self.done != self.total {
            return Err(format!("{} of {} synced writes", self.done, self.total));
        }
        self.phases
            .insert("fillsync".into(), (self.done, self.secs));
        Ok(())
    }
}

/// Adds the CPU `waiting` children used since `before` (their CPU then) to their idle CPU.
fn add_idle(waiting: &mut [Running], before: &[f64]) {
    for (r, b) in waiting.iter_mut().zip(before) {
        r.idle_cpu += (r.cpu() - b).max(0.0);
    }
}

/// What the engines' children reported: results by engine (those whose child ended well),
/// their phases' wall time, and the `note` lines.
pub struct Outcome {
    pub results: Results,
    pub wall: BTreeMap<String, f64>,
    pub notes: Vec<String>,
}

/// Runs every engine's child (`engines`: name, entries), one after another, each up to
/// readseq; then the fillsync phase in `rounds` rounds — round `r` visits the engines in
/// their order rotated left by `r`, each engine making its [`writes`] / `rounds` synced
/// writes there, one child at a time; then lets each child finish in turn.
pub fn run(
    exe: &Path,
    base: &Path,
    engines: &[(String, u64)],
    cache: usize,
    rounds: u64,
) -> Outcome {
    let rounds = rounds.max(1);
    let mut running: Vec<Running> = Vec::new();
    for (e, n) in engines {
        eprintln!("running {e} with {n} entries ...");
        let before: Vec<f64> = running.iter().map(Running::cpu).collect();
        match Running::start(exe, e, *n, cache, base) {
            Ok(r) => {
                add_idle(&mut running, &before);
                running.push(r);
            }
            Err(err) => {
                eprintln!("{e} failed: {err}");
                let _ = std::fs::remove_dir_all(base.join(format!("{e}-main")));
                let _ = std::fs::remove_dir_all(base.join(format!("{e}-random")));
            }
        }
    }
    eprintln!("running fillsync in {rounds} rounds ...");
    for r in 0..rounds {
        let len = running.len();
        let mut failed = Vec::new();
        for i in 0..len {
            let at = (i + r as usize) % len;
            if let Err(err) = running[at].round(r, rounds) {
                eprintln!("{} fillsync failed in round {r}: {err}", running[at].name);
                failed.push(at);
            }
        }
        failed.sort_unstable();
        for at in failed.into_iter().rev() {
            let mut gone = running.remove(at);
            let _ = gone.child.kill();
            let _ = gone.child.wait();
        }
    }
    let mut round_notes = vec![format!(
        "fillsync ran in {rounds} rounds, each visiting every engine once in an order rotated by one per round"
    )];
    round_notes.extend(round_ratios(&running));
    let mut out = Outcome {
        results: Results::new(),
        wall: BTreeMap::new(),
        notes: Vec::new(),
    };
    let mut idle = Vec::new();
    while !running.is_empty() {
        let mut r = running.remove(0);
        let before: Vec<f64> = running.iter().map(Running::cpu).collect();
        let res = r.finish();
        add_idle(&mut running, &before);
        idle.push(format!("{} {:.2} s", r.name, r.idle_cpu));
        match res {
            Ok(()) => {
                out.notes.append(&mut r.notes);
                out.wall.insert(r.name.clone(), r.wall);
                out.results.insert(r.name, r.phases);
            }
            Err(err) => eprintln!("{} failed: {err}", r.name),
        }
    }
    out.notes.extend(round_notes);
    out.notes.push(format!(
        "CPU each child used while it waited with its database open and other engines ran their phases: {}",
        idle.join(", ")
    ));
    out
}

/// One `note` per engine other than Strata: Strata's writes per second divided by the
/// engine's, round by round, with their median.
fn round_ratios(running: &[Running]) -> Vec<String> {
    let Some(s) = running.iter().find(|r| r.name == "strata") else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    for r in running.iter().filter(|r| r.name != "strata") {
        let mut ratios: Vec<f64> = s
            .rates
            .iter()
            .zip(&r.rates)
            .filter_map(|(a, b)| Some((*a)? / (*b)?))
            .collect();
        let listed: Vec<String> = ratios.iter().map(|x| format!("{x:.2}")).collect();
        ratios.sort_by(f64::total_cmp);
        let median = ratios.get(ratios.len() / 2).copied().unwrap_or(0.0);
        notes.push(format!(
            "{}: fillsync per round, Strata's rate / this engine's: {} (median {median:.2})",
            r.name,
            listed.join(" ")
        ));
    }
    notes
}
