import Foundation
import Pipeline

/// The one place the session's shared state changes: each stage records what happened (`SessionEvent`), and this applies
/// it under the session's lock, wakes the threads waiting on it, and tells the observer.
extension SessionRunner {
    func fail(_ stage: String, _ error: any Error) { record(.failed(stage: stage, error: "\(error)")) }

    /// Applies `event` to what the stages share, under `lock`; wakes every thread waiting on it; then tells the
    /// observer the event and any change of state it made. The one way a stage changes the session's shared state.
    func record(_ event: SessionEvent) {
        lock.lock()
        let before = state
        switch event {
        case .state(let s): state = s
        case .fragment(let startNs, let endNs, let frames, let startsWithKeyframe):
            newestFragmentEndNs = max(newestFragmentEndNs, endNs)
            if firstFragmentStartNs == nil && startsWithKeyframe { firstFragmentStartNs = startNs }
            framesEncoded += frames
            if case .interrupted = state {} else { state = .armed }
        case .interruption(let source, let i):
            switch source {
            case .video:
                if let k = interruptions.firstIndex(where: { $0.id == i.id }) {
                    interruptions[k] = i
                } else {
                    interruptions.append(i)
                }
                // Armed again only once the resumed stream is verified (seed 001), and the microphone is there too.
                state = i.endNs == nil ? .interrupted(reason: i.reason) : armedOrStillInterrupted
            case .audio:
                if let k = audioInterruptions.firstIndex(where: { $0.id == i.id }) {
                    audioInterruptions[k] = i
                } else {
                    audioInterruptions.append(i)
                }
                if !videoDone { state = i.endNs == nil ? .interrupted(reason: i.reason) : armedOrStillInterrupted }
            }
        case .audioGap(let gap): audioGaps.append(gap)
        case .candidate(let cand, _):
            // Retention is bounded in candidates, not shots (REQ-PRIV-6): the book evicts the oldest past its cap.
            let (isShot, drop) = book.record(cand)
            if let drop { audioWindows[drop] = nil }  // its audio goes with it, unless a shot still needs it
            // A bay-mate's relay of the same swing, still waiting, gives way to what this microphone heard.
            // Its cut goes too: this shot asks for its own, a few ms away (two would leave a sliver of a fragment).
            if isShot, let same = relay.heard(cand, waiting: book.pending), let gone = book.withdraw(same) {
                fragmentCuts.cancel(atNs: postRollEnd(of: gone))
            }
            if isShot {
                eventTimeline.append(timeNs: cand.t0Ns, kind: .shot, reference: cand.id, value: Int64(book.shots.count))
                shotAdded(cand)
            }
        case .audioWindow, .minted: break  // applied by `keep(_:for:)` and the minter
        case .sourceEnded(.audio): audioDone = true
        case .sourceEnded(.video): videoDone = true
        case .failed(let stage, let error): errors.append("\(stage): \(error)")
        case .note(let note): policyNotes.append(note)
        }
        let after = state
        lock.broadcast()
        lock.unlock()
        guard let observe = options.observe else { return }
        observe(event)
        // A change of state the event made, said too (unless the event was the state itself).
        if case .state = event { return }
        if after != before { observe(.state(after)) }
    }

    /// Keeps a candidate's audio window for its mint — only while the candidate is retained (or a shot waits for it):
    /// retention stays bounded.
    func keep(_ window: AudioWindow, for id: UInt64) {
        lock.lock()
        if book.needsAudio(id) { audioWindows[id] = window }
        lock.broadcast()
        lock.unlock()
        options.observe?(.audioWindow(shot: id, samples: window.samples.count, missing: window.missing))
    }

    /// What the audio stage measured, for the report (after its thread ended; nothing without an audio source).
    var envelope: PeakEnvelope { audioStage?.envelope ?? PeakEnvelope() }
    var audioDriftMaxNs: Int64 { audioStage?.driftMaxNs ?? 0 }
    var audioBacklogDeepestBlocks: Int { audioStage?.backlogDeepestBlocks ?? 0 }

    /// Armed, unless a source's interruption is still open: then interrupted by that one. Under `lock`.
    var armedOrStillInterrupted: SessionState {
        if let open = (interruptions + audioInterruptions).last(where: { $0.endNs == nil }) {
            return .interrupted(reason: open.reason)
        }
        return .armed
    }
}
