import Pipeline

/// What a session's stages do beyond their kind, found once when the session is composed: a plugin says it by the
/// protocols it adopts (Modules/Pipeline/Stages.swift), and this is the one place the session asks. Every stage reads
/// its partners here, never by casting a component itself.
struct StageRoles {
    /// Sinks told of every candidate, shot and clip announced (a host's live view).
    let eventSinks: [EventSink]
    /// Sinks that keep clips they could not deliver and send them later (the network sink's outbox), with their place
    /// among the sinks (a clip owed waits for those places).
    let owedSenders: [(index: Int, sender: OwedClipsSending)]
    /// Sinks that show a shot's first look ahead of its clip.
    let lookSenders: [LookSending]
    /// Sinks that see every captured frame (a live preview).
    let frameObservers: [FrameObserving]
    /// Sinks told the device's state once a second.
    let statusObservers: [DeviceStatusObserving]
    /// Sinks whose transfers yield when policy says so.
    let transferYielding: [TransferYielding]
    /// Sinks that pass on shots a bay-mate heard.
    let shotRelaying: [ShotRelaying]
    /// Sinks that keep a history of their link, for the report.
    let sinkStatus: [SinkStatusReporting]
    /// The audio source's own device, when a stop or the end of capture must stop waiting for it to come back.
    let audioDeviceWaiting: DeviceWaiting?
    /// The audio source's interruptions (a microphone that goes away and comes back).
    let audioInterruptions: InterruptionReporting?
    /// The audio source's own sample clock, fitted against the capture clock (a sound card).
    let audioClock: SampleClockMapping?
    /// What each source says about itself, for the report and meta.json (a camera: its mode and why), asked when
    /// needed: a camera knows more once it has warmed.
    let videoDetailing: SourceDetailing?
    let audioDetailing: SourceDetailing?
    /// Frames the encoder refused or left unended, for the report.
    let encoderRefusals: FrameRefusing?

    init(_ c: SessionRunner.Components) {
        eventSinks = c.sinks.compactMap { $0 as? EventSink }
        owedSenders = c.sinks.enumerated().compactMap { i, s in (s as? OwedClipsSending).map { (i, $0) } }
        lookSenders = c.sinks.compactMap { $0 as? LookSending }
        frameObservers = c.sinks.compactMap { $0 as? FrameObserving }
        statusObservers = c.sinks.compactMap { $0 as? DeviceStatusObserving }
        transferYielding = c.sinks.compactMap { $0 as? TransferYielding }
        shotRelaying = c.sinks.compactMap { $0 as? ShotRelaying }
        sinkStatus = c.sinks.compactMap { $0 as? SinkStatusReporting }
        audioDeviceWaiting = c.audio as? DeviceWaiting
        audioInterruptions = c.audio as? InterruptionReporting
        audioClock = c.audio as? SampleClockMapping
        videoDetailing = c.video as? SourceDetailing
        audioDetailing = c.audio as? SourceDetailing
        encoderRefusals = c.encoder as? FrameRefusing
    }
}
