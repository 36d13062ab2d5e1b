//! `plan`'s pod parser thread: a dump's pods, parsed and converted while the scanner reads on.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use k8s_openapi::api::core::v1::Pod;
use simulator::pod::{PodInfo, PodInterner};

use super::{Failure, Item, Seen, SnapshotError, parse_pod};
use crate::core::ClusterView;
use crate::json_scan::Position;

/// The pods of JSON lists, parsed and converted (`PodInfo::interned`) on a second thread while
/// the scanner reads on: parsing is most of reading a large dump (a pod is 5–7 KB of JSON),
/// and the scanner's pass most of the rest. The thread holds the interner meanwhile, and its
/// pods' short-lived parts are freed where they were made. It hands its pods back in order, so
/// the pods, their shared shapes and the first error are those of reading one item at a time.
///
/// Parsing costs more than scanning, so the parser thread falls behind and the scanner would
/// wait for it about a third of the time. Instead, a batch queued while every batch in flight is
/// still unparsed is parsed by the scanner's thread itself and sent to the parser thread only
/// to be converted, in its turn (measured on a 76,000-pod dump: see `Sharing`).
pub(super) struct PodParser<'scope> {
    to_parser: SyncSender<Work>,
    parsed: Receiver<Vec<Result<ParsedPod, Failure>>>,
    parser: std::thread::ScopedJoinHandle<'scope, PodInterner>,
    batch: Vec<QueuedPod>,
    /// Batches sent and not yet received back.
    in_flight: usize,
    /// A pod was refused: the pods after it are not read.
    refused: bool,
    /// Batches sent so far.
    sent: usize,
}

/// Whether the scanner's thread parses batches itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sharing {
    /// When the parser thread is behind (every batch in flight not yet parsed): what `plan`
    /// does.
    #[cfg_attr(test, expect(dead_code, reason = "the unit tests read with `EverySecondBatch`"))]
    WhenBehind,
    /// Every second batch, whatever the parser thread's pace: the unit tests' rule, so that
    /// both paths are covered without depending on timing (the command-line tests run the
    /// binary, with `WhenBehind`).
    #[cfg(test)]
    EverySecondBatch,
}

impl Sharing {
    /// The rule of this build (the only one `PodParser` follows).
    #[cfg(not(test))]
    const BUILT: Sharing = Sharing::WhenBehind;
    #[cfg(test)]
    const BUILT: Sharing = Sharing::EverySecondBatch;
}

/// A batch for the parser thread: pod items to parse and convert, or pods the scanner's
/// thread parsed, to convert.
enum Work {
    Items(Vec<QueuedPod>),
    Parsed(Vec<Result<(Pod, Vec<String>), Failure>>),
}

/// A pod item copied out of the scanner's buffer, with where it was read.
pub(super) struct QueuedPod {
    pub text: String,
    pub at: Position,
    pub described: String,
}

struct ParsedPod {
    pod: Arc<PodInfo>,
    unknown_fields: Vec<String>,
}

impl<'scope> PodParser<'scope> {
    /// Pods sent to the parser thread at a time: a channel's cost per message is small against
    /// that of parsing a batch.
    const BATCH: usize = 128;
    /// Batches in flight at most; so neither channel, bounded to it, ever blocks its sender
    /// for good, and at most this many batches of parsed pods wait to be added.
    const IN_FLIGHT: usize = 8;

    pub fn start(scope: &'scope std::thread::Scope<'scope, '_>, file: &'scope str, mut interner: PodInterner) -> Self {
        let (to_parser, queued) = sync_channel::<Work>(Self::IN_FLIGHT);
        let (done, parsed) = sync_channel(Self::IN_FLIGHT);
        let parser = scope.spawn(move || {
            for work in queued {
                let results = match work {
                    Work::Items(batch) => batch.into_iter().map(|queued| queued.parse(file, &mut interner)).collect(),
                    Work::Parsed(batch) => batch.into_iter().map(|parsed| convert(parsed, &mut interner)).collect(),
                };
                if done.send(results).is_err() {
                    break;
                }
            }
            interner
        });
        let batch = Vec::with_capacity(Self::BATCH);
        PodParser { to_parser, parsed, parser, batch, in_flight: 0, refused: false, sent: 0 }
    }

    /// Ends the parser thread (what it still had to parse is dropped) and takes its interner
    /// back: a fresh one if the thread failed, which has then been reported.
    pub fn stop(self) -> PodInterner {
        let PodParser { to_parser, parsed, parser, .. } = self;
        drop((to_parser, parsed));
        parser.join().unwrap_or_default()
    }

    /// Queues a pod item; adds the pods parsed by now. An error is that of the first refused
    /// pod, which was read before this one.
    pub fn queue(&mut self, pod: QueuedPod, mut target: Added<'_>) -> Result<(), Failure> {
        self.batch.push(pod);
        if self.batch.len() < Self::BATCH {
            return Ok(());
        }
        while let Ok(results) = self.parsed.try_recv() {
            self.add(results, target.reborrow())?;
        }
        let parse_here = match Sharing::BUILT {
            Sharing::WhenBehind => self.in_flight == Self::IN_FLIGHT,
            #[cfg(test)]
            Sharing::EverySecondBatch => self.sent % 2 == 1,
        };
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(Self::BATCH));
        let work = if parse_here {
            Work::Parsed(batch.into_iter().map(|queued| queued.parse_only(target.file)).collect())
        } else {
            Work::Items(batch)
        };
        if self.in_flight == Self::IN_FLIGHT {
            self.receive(target.reborrow())?;
        }
        self.send(work)
    }

    /// Adds every pod queued so far (none once one was refused: that error was the first).
    pub fn finish(&mut self, mut target: Added<'_>) -> Result<(), Failure> {
        if self.refused {
            return Ok(());
        }
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            self.send(Work::Items(batch))?;
        }
        while self.in_flight > 0 {
            self.receive(target.reborrow())?;
        }
        Ok(())
    }

    fn send(&mut self, work: Work) -> Result<(), Failure> {
        self.to_parser.send(work).map_err(|_| parser_stopped())?;
        self.in_flight += 1;
        self.sent += 1;
        Ok(())
    }

    fn receive(&mut self, target: Added<'_>) -> Result<(), Failure> {
        let results = self.parsed.recv().map_err(|_| parser_stopped())?;
        self.add(results, target)
    }

    /// Adds a batch of parsed pods, up to the first refused one.
    fn add(&mut self, results: Vec<Result<ParsedPod, Failure>>, target: Added<'_>) -> Result<(), Failure> {
        self.in_flight -= 1;
        for result in results {
            let ParsedPod { pod, unknown_fields } = result.inspect_err(|_| self.refused = true)?;
            target.seen.count_unknown_fields(target.file, "Pod", unknown_fields);
            target.view.pods.push(pod);
        }
        Ok(())
    }
}

/// Where parsed pods go.
pub(super) struct Added<'t> {
    pub view: &'t mut ClusterView,
    pub seen: &'t mut Seen,
    pub file: &'t str,
}

impl Added<'_> {
    fn reborrow(&mut self) -> Added<'_> {
        Added { view: self.view, seen: self.seen, file: self.file }
    }
}

/// The parser thread ended early: only a bug in it (a panic) does that.
fn parser_stopped() -> Failure {
    let message = "internal error: the pod parser thread stopped".to_string();
    Failure::Unplaced(Box::new(SnapshotError::Syntax { file: String::new(), message }))
}

impl QueuedPod {
    fn parse(self, file: &str, interner: &mut PodInterner) -> Result<ParsedPod, Failure> {
        convert(self.parse_only(file), interner)
    }

    /// The pod parsed and checked, its error placed in its text.
    fn parse_only(self, file: &str) -> Result<(Pod, Vec<String>), Failure> {
        let item = Item::Json { text: &self.text, at: self.at };
        parse_pod(item, file, &self.described)
            .map_err(|e| Failure::Object(Box::new((e.placed_in_item(&self.text, self.at), String::new(), self.at))))
    }
}

/// A parsed pod in its compact form, through the interner (the parser thread's).
fn convert(parsed: Result<(Pod, Vec<String>), Failure>, interner: &mut PodInterner) -> Result<ParsedPod, Failure> {
    let (pod, unknown_fields) = parsed?;
    Ok(ParsedPod { pod: Arc::new(PodInfo::interned(pod, interner)), unknown_fields })
}
