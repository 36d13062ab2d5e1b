//! `plan`'s pod parser thread: a dump's pods, parsed and converted while the scanner reads on.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use simulator::pod::{PodInfo, PodInterner};

use super::{Failure, Item, Seen, SnapshotError, parse_pod};
use crate::core::ClusterView;
use crate::json_scan::Position;

/// The pods of JSON lists, parsed and converted (`PodInfo::interned`) on a second thread while
/// the scanner reads on: parsing is most of reading a large dump (a pod is 5–7 KB of JSON),
/// and the scanner's pass most of the rest. The thread holds the interner meanwhile, and its
/// pods' short-lived parts are freed where they were made. It hands its pods back in order, so
/// the pods, their shared shapes and the first error are those of reading one item at a time.
pub(super) struct PodParser<'scope> {
    to_parser: SyncSender<Vec<QueuedPod>>,
    parsed: Receiver<Vec<Result<ParsedPod, Failure>>>,
    parser: std::thread::ScopedJoinHandle<'scope, PodInterner>,
    batch: Vec<QueuedPod>,
    /// Batches sent and not yet received back.
    in_flight: usize,
    /// A pod was refused: the pods after it are not read.
    refused: bool,
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
    const IN_FLIGHT: usize = 4;

    pub fn start(scope: &'scope std::thread::Scope<'scope, '_>, file: &'scope str, mut interner: PodInterner) -> Self {
        let (to_parser, queued) = sync_channel::<Vec<QueuedPod>>(Self::IN_FLIGHT);
        let (done, parsed) = sync_channel(Self::IN_FLIGHT);
        let parser = scope.spawn(move || {
            for batch in queued {
                let results = batch.into_iter().map(|queued| queued.parse(file, &mut interner)).collect();
                if done.send(results).is_err() {
                    break;
                }
            }
            interner
        });
        let batch = Vec::with_capacity(Self::BATCH);
        PodParser { to_parser, parsed, parser, batch, in_flight: 0, refused: false }
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
        if self.in_flight == Self::IN_FLIGHT {
            self.receive(target.reborrow())?;
        }
        self.send()?;
        while let Ok(results) = self.parsed.try_recv() {
            self.add(results, target.reborrow())?;
        }
        Ok(())
    }

    /// Adds every pod queued so far (none once one was refused: that error was the first).
    pub fn finish(&mut self, mut target: Added<'_>) -> Result<(), Failure> {
        if self.refused {
            return Ok(());
        }
        if !self.batch.is_empty() {
            self.send()?;
        }
        while self.in_flight > 0 {
            self.receive(target.reborrow())?;
        }
        Ok(())
    }

    fn send(&mut self) -> Result<(), Failure> {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(Self::BATCH));
        self.to_parser.send(batch).map_err(|_| parser_stopped())?;
        self.in_flight += 1;
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
        let item = Item::Json { text: &self.text, at: self.at };
        match parse_pod(item, file, &self.described) {
            Ok((pod, unknown_fields)) => {
                Ok(ParsedPod { pod: Arc::new(PodInfo::interned(pod, interner)), unknown_fields })
            }
            Err(e) => Err(Failure::Object(Box::new((e.placed_in_item(&self.text, self.at), String::new(), self.at)))),
        }
    }
}
