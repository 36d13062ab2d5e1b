//! Runs a reader on many inputs and collects what went wrong: panics (with where they were
//! raised), inputs that outlive a deadline, inputs that make a reader hold too much memory, and
//! answers an oracle calls false.
//!
//! Each input runs on its own thread, named after the input (`fuzz snapshot#123`), so that
//! even a failure that ends the process (a stack overflow, an allocation past the hard cap)
//! says which input caused it; `CA_FUZZ_REPLAY=snapshot#123` runs that one input again.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::SmallRng;

/// Inputs of one full run (all targets together) when `CA_FUZZ_INPUTS` is not set.
pub const DEFAULT_INPUTS: u64 = 3_000;
/// The seed of the generators when `CA_FUZZ_SEED` is not set: the default run is the same on
/// every machine, so a failure in CI is a failure at the desk.
pub const DEFAULT_SEED: u64 = 0x5EED_F022;
/// How long one input may take before it counts as a hang (`CA_FUZZ_DEADLINE_SECS`). The
/// largest input (the 217 KB example dump) takes well under a second in a debug build; the
/// margin is for a loaded machine.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);
/// The most memory an input may make a reader hold at once: this much, plus
/// [`MEMORY_PER_INPUT_BYTE`] for each byte of the input. A reader that holds more for a small
/// input can be made to take any amount with a larger one. (The example dump, 217 KB, peaks at
/// 7 MiB; a regex alone may take 32 MiB.)
pub const MEMORY_BUDGET: isize = 48 << 20;
/// See [`MEMORY_BUDGET`]. What counts is what the input's thread allocates and has not freed
/// (the readers run there, async ones on a current-thread runtime).
pub const MEMORY_PER_INPUT_BYTE: isize = 64;
/// Past this, allocations fail and the process ends ("memory allocation … failed"), so a
/// reader that allocates without bound cannot take the machine down with it.
const MEMORY_HARD_CAP: isize = 2 << 30;
/// The stack of an input's thread: tokio's worker threads (where the controller reads its
/// ConfigMaps) have 2 MiB, the smallest stack any of these readers runs on.
const STACK: usize = 2 << 20;

/// What a reader made of an input.
pub enum Outcome {
    /// Read (as a value, a configuration, a plan).
    Accepted,
    /// Refused, with the message the user would see.
    Refused(String),
    /// An answer that is wrong (an oracle's finding), e.g. a value that does not round-trip.
    Lie(String),
}

/// One reader under test.
pub struct Target {
    pub name: &'static str,
    /// Its share of the inputs (out of the sum over all targets).
    pub weight: u64,
    /// Makes an input from a generator seeded for that input alone.
    pub generate: fn(&mut SmallRng) -> Vec<u8>,
    /// Feeds the input to the reader.
    pub read: fn(&[u8]) -> Outcome,
}

/// A refusal of the file `file` must say which file (the user may have given several).
pub fn refused_naming(message: String, file: &str) -> Outcome {
    if message.contains(file) {
        Outcome::Refused(message)
    } else {
        Outcome::Lie(format!("refused without naming the file {file}: {message}"))
    }
}

// ---------------------------------------------------------------------------------------------
// Memory: a counting allocator. Each input's thread points it at that input's meter.

/// Bytes an input's thread holds now and at most, shared with the thread that waits for it.
#[derive(Default)]
struct Meter {
    live: AtomicIsize,
    peak: AtomicIsize,
}

thread_local! {
    /// The meter of the input this thread runs, or null on other threads.
    static METER: Cell<*const Meter> = const { Cell::new(std::ptr::null()) };
    /// Where the last panic on this thread was raised, with its message.
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

struct CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

impl CountingAllocator {
    /// Counts `delta` bytes against the current input; false when they would pass the hard cap.
    fn charge(delta: isize) -> bool {
        METER
            .try_with(|meter| {
                let meter = meter.get();
                if meter.is_null() {
                    return true;
                }
                // SAFETY: the input's thread owns an `Arc` of its meter for as long as the
                // pointer is set.
                let meter = unsafe { &*meter };
                let live = meter.live.fetch_add(delta, Ordering::Relaxed) + delta;
                if delta > 0 && live > MEMORY_HARD_CAP {
                    meter.live.fetch_sub(delta, Ordering::Relaxed);
                    return false;
                }
                meter.peak.fetch_max(live, Ordering::Relaxed);
                true
            })
            .unwrap_or(true)
    }
}

// SAFETY: every call is forwarded to the system allocator; the counting only adds arithmetic.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !Self::charge(layout.size() as isize) {
            return std::ptr::null_mut();
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !Self::charge(layout.size() as isize) {
            return std::ptr::null_mut();
        }
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        Self::charge(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let grown = new_size as isize - layout.size() as isize;
        if !Self::charge(grown) {
            return std::ptr::null_mut();
        }
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if moved.is_null() {
            Self::charge(-grown);
        }
        moved
    }
}

// ---------------------------------------------------------------------------------------------
// Panics: recorded per thread instead of printed, for the threads that run inputs.

fn record_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let print = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if METER.with(|m| m.get().is_null()) {
                return print(info);
            }
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            let place = info.location().map_or_else(|| "?".into(), |l| format!("{}:{}", l.file(), l.line()));
            PANIC.with(|p| *p.borrow_mut() = Some(format!("{place}: {message}")));
        }));
    });
}

// ---------------------------------------------------------------------------------------------
// The run.

fn env_u64(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let text = text.trim().replace('_', "");
    let value = text
        .strip_prefix("0x")
        .map_or_else(|| text.parse(), |hex| u64::from_str_radix(hex, 16))
        .unwrap_or_else(|_| panic!("{name}={text:?} is not a number"));
    Some(value)
}

/// The generator of input `index` of `target`: independent of every other input, so one input
/// can be produced again alone.
fn rng_for(seed: u64, target: &str, index: u64) -> SmallRng {
    // FNV-1a over the target's name: stable across runs and platforms.
    let name = target.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    SmallRng::seed_from_u64(seed ^ name.rotate_left(17) ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// The finding's class: where it panicked, or what kind of failure it was.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Panic(String),
    Hang,
    Memory,
    Lie,
    /// A refusal that does not say why.
    Unexplained,
}

struct Finding {
    index: u64,
    detail: String,
    input: Vec<u8>,
    count: u64,
}

/// How an input came out, with its time and peak memory.
struct Answer {
    outcome: Result<Outcome, String>,
    elapsed: Duration,
    peak: isize,
}

enum Run {
    Answered(Answer),
    Hung,
}

/// Prints `text` straight to the process's stderr: the test harness's capture would lose it if
/// the process ends before the test does.
fn shout(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// The input, readable: as text when it is UTF-8 (escaped), else as escaped bytes; long ones
/// shortened in the middle.
pub fn show(input: &[u8]) -> String {
    let text = match std::str::from_utf8(input) {
        Ok(text) => format!("{text:?}"),
        Err(_) => format!("b\"{}\"", input.escape_ascii()),
    };
    const KEEP: usize = 1_500;
    if text.len() <= 2 * KEEP {
        return text;
    }
    let start = text.char_indices().nth(KEEP).map_or(text.len(), |(i, _)| i);
    let end = text.char_indices().rev().nth(KEEP).map_or(0, |(i, _)| i);
    format!("{} …[{} bytes in all]… {}", &text[..start], input.len(), &text[end..])
}

fn findings_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-findings")
}

/// Keeps a finding's whole input on disk, for inputs too long to print.
fn save(target: &str, index: u64, input: &[u8]) -> PathBuf {
    let dir = findings_dir();
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{target}-{index}.input"));
    let _ = std::fs::write(&path, input);
    path
}

fn budget(input: &[u8]) -> isize {
    MEMORY_BUDGET + MEMORY_PER_INPUT_BYTE * input.len() as isize
}

fn run_one(target: &Target, index: u64, input: &[u8], deadline: Duration) -> Run {
    let meter = Arc::new(Meter::default());
    let (answer, answered) = channel();
    let thread_meter = Arc::clone(&meter);
    let thread_input = input.to_vec();
    let read = target.read;
    let spawned = std::thread::Builder::new()
        .name(format!("fuzz {}#{index}", target.name))
        .stack_size(STACK)
        .spawn(move || {
            METER.with(|m| m.set(Arc::as_ptr(&thread_meter)));
            let start = Instant::now();
            let outcome = catch_unwind(AssertUnwindSafe(|| read(&thread_input)));
            let elapsed = start.elapsed();
            drop(thread_input);
            let outcome = outcome.map_err(|_| PANIC.with(|p| p.borrow_mut().take()).unwrap_or_default());
            let peak = thread_meter.peak.load(Ordering::Relaxed);
            METER.with(|m| m.set(std::ptr::null()));
            let _ = answer.send(Answer { outcome, elapsed, peak });
        })
        .expect("start an input's thread");
    let started = Instant::now();
    let mut said = false;
    loop {
        match answered.recv_timeout(Duration::from_millis(50)) {
            Ok(answer) => {
                let _ = spawned.join();
                return Run::Answered(answer);
            }
            Err(RecvTimeoutError::Disconnected) => {
                // The thread ended without answering: it panicked outside `catch_unwind`.
                let _ = spawned.join();
                return Run::Answered(Answer {
                    outcome: Err("the input's thread ended without an answer".into()),
                    elapsed: started.elapsed(),
                    peak: meter.peak.load(Ordering::Relaxed),
                });
            }
            // The thread cannot be stopped: it runs on until the process ends.
            Err(RecvTimeoutError::Timeout) if started.elapsed() > deadline => return Run::Hung,
            Err(RecvTimeoutError::Timeout) => {
                let live = meter.live.load(Ordering::Relaxed);
                if live > budget(input) && !said {
                    said = true;
                    // Still allocating: say which input before the hard cap ends the process.
                    shout(&format!(
                        "fuzz {}#{index}: holds {} MiB and is still running; input saved at {}\n",
                        target.name,
                        live >> 20,
                        save(target.name, index, input).display()
                    ));
                }
            }
        }
    }
}

/// Summary of one target's run (printed; `--nocapture` shows it for passing runs).
#[derive(Default)]
struct Tally {
    inputs: u64,
    accepted: u64,
    refused: u64,
    slowest: (Duration, u64),
    largest_peak: (isize, u64),
    bytes: u64,
    /// How often each refusal (its first words) came: whether the inputs get past the first
    /// checks of a reader.
    refusals: BTreeMap<String, u64>,
}

/// How a run goes: which inputs, from which seed, with how long for each.
pub struct Settings {
    pub seed: u64,
    pub deadline: Duration,
    /// The numbers of the inputs to run.
    pub inputs: Vec<u64>,
    /// Print each input before it runs (a replay).
    pub show_inputs: bool,
}

impl Settings {
    /// From the environment: `CA_FUZZ_INPUTS` shared among `all` by weight, `CA_FUZZ_SEED`,
    /// `CA_FUZZ_DEADLINE_SECS`, `CA_FUZZ_REPLAY` (no inputs at all for the other readers).
    pub fn from_env(target: &Target, all: &[Target]) -> Settings {
        let replay = std::env::var("CA_FUZZ_REPLAY").ok();
        let inputs = match replay.as_deref().and_then(|r| r.split_once('#')) {
            Some((name, _)) if name != target.name => Vec::new(),
            Some((_, index)) => vec![index.parse().expect("CA_FUZZ_REPLAY=<reader>#<number>")],
            None => {
                let total = env_u64("CA_FUZZ_INPUTS").unwrap_or(DEFAULT_INPUTS);
                let weights: u64 = all.iter().map(|t| t.weight).sum();
                (0..(total * target.weight).div_ceil(weights).max(1)).collect()
            }
        };
        Settings {
            seed: env_u64("CA_FUZZ_SEED").unwrap_or(DEFAULT_SEED),
            deadline: env_u64("CA_FUZZ_DEADLINE_SECS").map_or(DEFAULT_DEADLINE, Duration::from_secs),
            inputs,
            show_inputs: replay.is_some(),
        }
    }
}

/// Runs `target` on its share of the inputs (see [`Settings::from_env`]) and fails with every
/// finding, each with its smallest input.
pub fn fuzz(target: &Target, all: &[Target]) {
    if let Err(report) = fuzz_with(target, &Settings::from_env(target, all)) {
        panic!("{report}");
    }
}

/// Runs `target` on the inputs `settings` name; the report of the findings, if any.
pub fn fuzz_with(target: &Target, settings: &Settings) -> Result<(), String> {
    record_panics();
    let Settings { seed, deadline, inputs, show_inputs } = settings;
    let (seed, deadline) = (*seed, *deadline);
    if inputs.is_empty() {
        return Ok(());
    }
    let mut findings: BTreeMap<Class, Finding> = BTreeMap::new();
    let mut tally = Tally::default();
    let wall = Instant::now();
    for &index in inputs {
        let input = (target.generate)(&mut rng_for(seed, target.name, index));
        if *show_inputs {
            eprintln!("{}#{index}: {}", target.name, show(&input));
        }
        tally.inputs += 1;
        tally.bytes += input.len() as u64;
        let (class, detail) = match run_one(target, index, &input, deadline) {
            Run::Hung => (Class::Hang, format!("no answer after {deadline:?}")),
            Run::Answered(answer) => {
                if answer.elapsed > tally.slowest.0 {
                    tally.slowest = (answer.elapsed, index);
                }
                if answer.peak > tally.largest_peak.0 {
                    tally.largest_peak = (answer.peak, index);
                }
                match answer.outcome {
                    Err(panic) => (Class::Panic(panic.split(": ").next().unwrap_or("").to_string()), panic),
                    Ok(_) if answer.peak > budget(&input) => (
                        Class::Memory,
                        format!("held {} MiB at once for {} bytes of input", answer.peak >> 20, input.len()),
                    ),
                    Ok(Outcome::Lie(lie)) => (Class::Lie, lie),
                    Ok(Outcome::Refused(message)) if message.trim().is_empty() => {
                        (Class::Unexplained, "refused without saying why".into())
                    }
                    Ok(Outcome::Refused(message)) => {
                        tally.refused += 1;
                        let words: String = message.chars().filter(|c| !c.is_ascii_digit()).take(70).collect();
                        *tally.refusals.entry(words).or_default() += 1;
                        continue;
                    }
                    Ok(Outcome::Accepted) => {
                        tally.accepted += 1;
                        continue;
                    }
                }
            }
        };
        let hung = class == Class::Hang;
        let finding = findings.entry(class).or_insert_with(|| Finding {
            index,
            detail: detail.clone(),
            input: input.clone(),
            count: 0,
        });
        finding.count += 1;
        if input.len() < finding.input.len() {
            *finding = Finding { index, detail, input, count: finding.count };
        }
        if hung {
            // Its thread still runs; more inputs would only compete with it.
            break;
        }
    }
    let mut refusals: Vec<(&String, &u64)> = tally.refusals.iter().collect();
    refusals.sort_by_key(|(_, n)| std::cmp::Reverse(**n));
    eprintln!(
        "fuzz {}: {} inputs ({} KiB) in {:.1?}: {} accepted, {} refused; slowest #{} {:.1?}; largest peak #{} {} KiB\n  \
         most refused for: {:?}",
        target.name,
        tally.inputs,
        tally.bytes >> 10,
        wall.elapsed(),
        tally.accepted,
        tally.refused,
        tally.slowest.1,
        tally.slowest.0,
        tally.largest_peak.1,
        tally.largest_peak.0 >> 10,
        &refusals[..refusals.len().min(4)],
    );
    if findings.is_empty() {
        return Ok(());
    }
    let mut report = format!("{}: {} kinds of findings (seed {seed:#x})\n", target.name, findings.len());
    for (class, f) in &findings {
        let path = save(target.name, f.index, &f.input);
        report.push_str(&format!(
            "\n{class:?}, {} inputs; smallest: CA_FUZZ_SEED={seed:#x} CA_FUZZ_REPLAY={}#{} ({})\n  {}\n  input: {}\n",
            f.count,
            target.name,
            f.index,
            path.display(),
            f.detail,
            show(&f.input),
        ));
    }
    Err(report)
}
