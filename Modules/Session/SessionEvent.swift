import Pipeline

/// Where a session is: what its progress line, a host's live view and the studio show.
public enum SessionState: Sendable, Equatable, CustomStringConvertible {
    /// Opened; no fragment sealed yet.
    case warming
    /// Capturing into the ring with detection live.
    case armed
    /// A source's device is lost or stalled (its reason); armed again only once the resumed stream is verified.
    case interrupted(reason: String)
    /// Capture is over: minting and delivering what is owed.
    case draining

    public var description: String {
        switch self {
        case .warming: "warming"
        case .armed: "armed"
        case .interrupted(let reason): "interrupted: \(reason)"
        case .draining: "draining"
        }
    }
}

/// Which of a session's sources an event is about.
public enum SessionSource: String, Sendable {
    case video, audio
}

/// What happened in a session, as the stage that owns each thread says it. Every change to the session's shared state
/// goes through `SessionRunner.record(_:)`, which applies it under the session's lock and then passes it to the
/// session's observer (`Options.observe`): tests assert these, not printed English; the report and the studio render
/// the words.
public enum SessionEvent: Sendable {
    /// The state changed.
    case state(SessionState)
    /// The encoder sealed a fragment into the ring (its span on the capture clock, its frames).
    case fragment(startNs: Int64, endNs: Int64, frames: Int, startsWithKeyframe: Bool)
    /// A source was interrupted, or came back (`endNs` set; `verified` once its stream was checked).
    case interruption(SessionSource, SourceInterruption)
    /// The audio source lost samples.
    case audioGap(AudioGap)
    /// The detector found a candidate (a shot when it scores at least the threshold).
    case candidate(DetectedImpact, isShot: Bool)
    /// A candidate's audio window was cut (kept only while the candidate is retained).
    case audioWindow(shot: UInt64, samples: Int, missing: Int)
    /// A clip was minted and queued for delivery.
    case minted(clipID: String, shot: UInt64)
    /// A source ended (its stream, a stop, a failure).
    case sourceEnded(SessionSource)
    /// A stage failed; the session goes on with what it has.
    case failed(stage: String, error: String)
    /// Something the report says about a shot or the policy (a roll cut short, a mint that waited).
    case note(String)
}
