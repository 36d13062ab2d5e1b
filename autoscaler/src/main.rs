//! `cluster-autoscaler`: the library's command line with the built-in cloud providers.

use libmimalloc_sys::{mi_option_set, mi_option_t};

/// mimalloc rather than glibc's malloc: the initial lists of a large cluster are parsed and
/// trimmed in a burst of allocations, which glibc keeps as fragmented resident memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// mimalloc (v3) options by their place in its `mi_option_e` (include/mimalloc.h); the crate
// names only some of them.
const ARENA_EAGER_COMMIT: mi_option_t = 4;
const PURGE_DELAY: mi_option_t = 15;
const PAGE_FULL_RETAIN: mi_option_t = 36;
const ALLOW_THP: mi_option_t = 43;

/// For the long-running controller, whose memory is mostly long-lived objects and whose bursts of
/// short-lived ones (a relist, an iteration's scratch) come seconds apart: free memory goes
/// back to the system at once rather than after mimalloc's default second, arenas are
/// committed as they are used, no empty pages are kept per size class, and no memory is
/// backed by transparent huge pages (a 2 MiB page stays resident whole while any object in
/// it lives: 120 MiB of the controller's memory were such pages). Measured with
/// `scripts/load-harness` at 5,000 nodes / 150,000 pods, two bursts: resident memory
/// 0.52 / 0.46 GiB (peak / steady) with the defaults, 0.46 / 0.41 GiB with these.
fn tune_allocator() {
    // SAFETY: plain setters of mimalloc's option table, called before any other thread runs.
    unsafe {
        mi_option_set(PURGE_DELAY, 0);
        mi_option_set(ARENA_EAGER_COMMIT, 0);
        mi_option_set(PAGE_FULL_RETAIN, 0);
        // mimalloc asks for huge pages no more for the arenas it maps from now on...
        mi_option_set(ALLOW_THP, 0);
    }
    // ...but it read this option when it started, before `main`, and its first arena is
    // already marked for them.
    disable_transparent_huge_pages();
}

/// No transparent huge pages for this process from now on, whatever its memory was marked
/// with: what mimalloc does at its start when `MIMALLOC_ALLOW_THP=0` is in the environment.
fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: a process attribute set with plain integer arguments; a kernel without it
    // answers an error, and huge pages are then left as they were.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// For `simulate` and `plan`, short batch runs that allocate and free at a high rate: the
/// defaults, huge pages included, but free memory is never handed back to the system. Handed
/// back after mimalloc's default delay, it was soon needed again and faulted back in, each
/// huge page zeroed anew: `plan` of a 76,000-pod dump took 1,100–2,000 more page faults and
/// about a tenth more CPU that way (`perf stat`). The run's exit returns it all.
fn tune_allocator_for_batch() {
    // SAFETY: as in `tune_allocator`.
    unsafe {
        mi_option_set(PURGE_DELAY, -1);
    }
}

fn main() -> std::process::ExitCode {
    // `simulate` and `plan` are short batch runs: the controller's options made a simulated
    // day at 20,000 pods take 24% longer (mostly the lost huge pages and the immediate purges).
    match std::env::args_os().nth(1).as_deref().and_then(|a| a.to_str()) {
        Some("simulate") => tune_allocator_for_batch(),
        Some("plan") => {
            tune_allocator_for_batch();
            // `plan` reads a dump once and stops: zeroing 2 MiB pages as the dump's objects
            // first touch them costs more than the huge pages save. A 76,000-pod dump
            // (547 MB): 1.36–1.52 s and 221 MiB without, 1.41–1.81 s and 236–245 MiB with.
            // (A simulated day, which reuses its memory for minutes, is the other way round:
            // 17% slower without.)
            disable_transparent_huge_pages();
        }
        _ => tune_allocator(),
    }
    autoscaler::cli::main(autoscaler::compose::builtin_providers())
}
