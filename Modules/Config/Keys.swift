/// Every parameter of the catalogue as a typed key: `config[.clipPreNs]` is an `Int64`, `config[.fragmentSeconds]` a
/// `Double`. A misspelt key or a wrong type does not compile (the pattern of NIOCore's `ChannelOption`). Each key's name
/// is the catalogue's; `ConfigTests.everyCatalogueParameterHasATypedKeyOfItsType` keeps the two in step.

extension ConfigurationKey where Value == Int64 {
    /// `capture.videoBitrateBps` (bit/s).
    public static var videoBitrateBps: Self { .init("capture.videoBitrateBps") }
    /// `capture.fragmentCapacity` (fragments).
    public static var fragmentCapacity: Self { .init("capture.fragmentCapacity") }
    /// `capture.expectedFrameRate` (fps).
    public static var expectedFrameRate: Self { .init("capture.expectedFrameRate") }
    /// `capture.clipPreNs` (ns).
    public static var clipPreNs: Self { .init("capture.clipPreNs") }
    /// `capture.clipPostNs` (ns).
    public static var clipPostNs: Self { .init("capture.clipPostNs") }
    /// `capture.frameStartToExposureOffsetNs` (ns).
    public static var frameStartToExposureOffsetNs: Self { .init("capture.frameStartToExposureOffsetNs") }
    /// `capture.fragmentNs` (ns), derived.
    public static var fragmentNs: Self { .init("capture.fragmentNs") }
    /// `capture.ringFootprintBytes` (bytes), derived.
    public static var ringFootprintBytes: Self { .init("capture.ringFootprintBytes") }
    /// `capture.clipWindowNs` (ns), derived.
    public static var clipWindowNs: Self { .init("capture.clipWindowNs") }
    /// `capture.clipBytes` (bytes), derived.
    public static var clipBytes: Self { .init("capture.clipBytes") }
    /// `session.shots` (shots).
    public static var shots: Self { .init("session.shots") }
    /// `session.volumeBytes` (bytes), derived.
    public static var volumeBytes: Self { .init("session.volumeBytes") }
    /// `session.prdVolumeBytes` (bytes), derived.
    public static var prdVolumeBytes: Self { .init("session.prdVolumeBytes") }
    /// `detect.sampleRateHz` (Hz).
    public static var sampleRateHz: Self { .init("detect.sampleRateHz") }
    /// `detect.audioWindowNs` (ns).
    public static var audioWindowNs: Self { .init("detect.audioWindowNs") }
    /// `detect.audioPreNs` (ns).
    public static var audioPreNs: Self { .init("detect.audioPreNs") }
    /// `detect.maxRetainedCandidates` (candidates).
    public static var maxRetainedCandidates: Self { .init("detect.maxRetainedCandidates") }
    /// `detect.imuRateHz` (Hz).
    public static var imuRateHz: Self { .init("detect.imuRateHz") }
    /// `link.pumpTickIntervalNs` (ns).
    public static var pumpTickIntervalNs: Self { .init("link.pumpTickIntervalNs") }
    /// `link.owedRetryIntervalNs` (ns).
    public static var owedRetryIntervalNs: Self { .init("link.owedRetryIntervalNs") }
    /// `link.connectTimeoutNs` (ns).
    public static var connectTimeoutNs: Self { .init("link.connectTimeoutNs") }
    /// `link.syncBurstTarget` (probes).
    public static var syncBurstTarget: Self { .init("link.syncBurstTarget") }
    /// `link.controlCeilingBytesPerSec` (bytes/s).
    public static var controlCeilingBytesPerSec: Self { .init("link.controlCeilingBytesPerSec") }
    /// `link.concurrentPayloadTransfers` (transfers).
    public static var concurrentPayloadTransfers: Self { .init("link.concurrentPayloadTransfers") }
    /// `link.payloadPumpBudgetBytes` (bytes).
    public static var payloadPumpBudgetBytes: Self { .init("link.payloadPumpBudgetBytes") }
    /// `link.heartbeatIntervalNs` (ns), derived.
    public static var heartbeatIntervalNs: Self { .init("link.heartbeatIntervalNs") }
    /// `link.deadPeerTimeoutNs` (ns), derived.
    public static var deadPeerTimeoutNs: Self { .init("link.deadPeerTimeoutNs") }
    /// `host.ingestMinimumHeight` (lines).
    public static var ingestMinimumHeight: Self { .init("host.ingestMinimumHeight") }
    /// `host.ingestMinimumFPS` (fps).
    public static var ingestMinimumFPS: Self { .init("host.ingestMinimumFPS") }
    /// `device.settleEstimateMs` (ms).
    public static var settleEstimateMs: Self { .init("device.settleEstimateMs") }
    /// `device.storageFloorBytes` (bytes), derived.
    public static var storageFloorBytes: Self { .init("device.storageFloorBytes") }
    /// `policy.thermalHistoryWindow` (readings).
    public static var thermalHistoryWindow: Self { .init("policy.thermalHistoryWindow") }
    /// `policy.persistentSeriousReadings` (readings).
    public static var persistentSeriousReadings: Self { .init("policy.persistentSeriousReadings") }
    /// `policy.memoryBudgetBytes` (bytes).
    public static var memoryBudgetBytes: Self { .init("policy.memoryBudgetBytes") }
}

extension ConfigurationKey where Value == Double {
    /// `capture.fragmentSeconds` (s).
    public static var fragmentSeconds: Self { .init("capture.fragmentSeconds") }
    /// `capture.rollingShutterReadoutFrames` (frame intervals).
    public static var rollingShutterReadoutFrames: Self { .init("capture.rollingShutterReadoutFrames") }
    /// `capture.ringSeconds` (s), derived.
    public static var ringSeconds: Self { .init("capture.ringSeconds") }
    /// `capture.framesPerFragment` (frames), derived.
    public static var framesPerFragment: Self { .init("capture.framesPerFragment") }
    /// `session.prdClipSeconds` (s).
    public static var prdClipSeconds: Self { .init("session.prdClipSeconds") }
    /// `session.volumeSeconds` (s), derived.
    public static var volumeSeconds: Self { .init("session.volumeSeconds") }
    /// `detect.micToBallDefaultMetres` (m).
    public static var micToBallDefaultMetres: Self { .init("detect.micToBallDefaultMetres") }
    /// `detect.airTemperatureC` (°C).
    public static var airTemperatureC: Self { .init("detect.airTemperatureC") }
    /// `detect.speedOfSoundMps` (m/s), derived.
    public static var speedOfSoundMps: Self { .init("detect.speedOfSoundMps") }
    /// `detect.tofCorrectionSamples` (samples), derived.
    public static var tofCorrectionSamples: Self { .init("detect.tofCorrectionSamples") }
    /// `detect.audioRetentionBoundSeconds` (s), derived.
    public static var audioRetentionBoundSeconds: Self { .init("detect.audioRetentionBoundSeconds") }
    /// `link.heartbeatHz` (Hz).
    public static var heartbeatHz: Self { .init("link.heartbeatHz") }
    /// `policy.sampleHz` (Hz).
    public static var sampleHz: Self { .init("policy.sampleHz") }
    /// `policy.fairCelsius` (°C).
    public static var fairCelsius: Self { .init("policy.fairCelsius") }
    /// `policy.seriousCelsius` (°C).
    public static var seriousCelsius: Self { .init("policy.seriousCelsius") }
    /// `policy.criticalCelsius` (°C).
    public static var criticalCelsius: Self { .init("policy.criticalCelsius") }
}

extension ConfigurationKey where Value == Bool {
    /// `capture.allowFrameReordering`.
    public static var allowFrameReordering: Self { .init("capture.allowFrameReordering") }
    /// `capture.realTime`.
    public static var realTime: Self { .init("capture.realTime") }
    /// `capture.sealPostRollEarly`.
    public static var sealPostRollEarly: Self { .init("capture.sealPostRollEarly") }
}

/// Every typed key, by name and value type (for the test that keeps them in step with the catalogue).
extension Configuration {
    static let typedKeys: [(name: String, type: ParameterType)] = [
        ("capture.videoBitrateBps", .integer),
        ("capture.fragmentSeconds", .real),
        ("capture.fragmentCapacity", .integer),
        ("capture.expectedFrameRate", .integer),
        ("capture.clipPreNs", .integer),
        ("capture.clipPostNs", .integer),
        ("capture.sealPostRollEarly", .boolean),
        ("capture.allowFrameReordering", .boolean),
        ("capture.realTime", .boolean),
        ("capture.frameStartToExposureOffsetNs", .integer),
        ("capture.rollingShutterReadoutFrames", .real),
        ("capture.ringSeconds", .real),
        ("capture.fragmentNs", .integer),
        ("capture.framesPerFragment", .real),
        ("capture.ringFootprintBytes", .integer),
        ("capture.clipWindowNs", .integer),
        ("capture.clipBytes", .integer),
        ("session.shots", .integer),
        ("session.prdClipSeconds", .real),
        ("session.volumeSeconds", .real),
        ("session.volumeBytes", .integer),
        ("session.prdVolumeBytes", .integer),
        ("detect.sampleRateHz", .integer),
        ("detect.audioWindowNs", .integer),
        ("detect.audioPreNs", .integer),
        ("detect.maxRetainedCandidates", .integer),
        ("detect.micToBallDefaultMetres", .real),
        ("detect.airTemperatureC", .real),
        ("detect.imuRateHz", .integer),
        ("detect.speedOfSoundMps", .real),
        ("detect.tofCorrectionSamples", .real),
        ("detect.audioRetentionBoundSeconds", .real),
        ("link.heartbeatHz", .real),
        ("link.pumpTickIntervalNs", .integer),
        ("link.owedRetryIntervalNs", .integer),
        ("link.connectTimeoutNs", .integer),
        ("link.syncBurstTarget", .integer),
        ("link.controlCeilingBytesPerSec", .integer),
        ("link.concurrentPayloadTransfers", .integer),
        ("link.payloadPumpBudgetBytes", .integer),
        ("link.heartbeatIntervalNs", .integer),
        ("link.deadPeerTimeoutNs", .integer),
        ("host.ingestMinimumHeight", .integer),
        ("host.ingestMinimumFPS", .integer),
        ("device.settleEstimateMs", .integer),
        ("device.storageFloorBytes", .integer),
        ("policy.sampleHz", .real),
        ("policy.thermalHistoryWindow", .integer),
        ("policy.persistentSeriousReadings", .integer),
        ("policy.fairCelsius", .real),
        ("policy.seriousCelsius", .real),
        ("policy.criticalCelsius", .real),
        ("policy.memoryBudgetBytes", .integer),
    ]
}
