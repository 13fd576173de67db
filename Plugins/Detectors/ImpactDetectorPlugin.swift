import Config
import Detect
import Pipeline

/// `impact`: the streaming club–ball impact detector (Modules/Detect) as a pipeline stage.
public final class ImpactDetectorStage: ImpactDetecting {
    var settings: ImpactDetector.Settings?
    let configure: (inout ImpactDetector.Settings) -> Void
    var detector: ImpactDetector?

    init(configure: @escaping (inout ImpactDetector.Settings) -> Void) { self.configure = configure }

    public func start(sampleRate: Int, streamStartNs: Int64) throws {
        var s = ImpactDetector.Settings(sampleRate: sampleRate)
        configure(&s)
        if let problem = s.problem { throw DetectorStageError(problem) }
        let d = ImpactDetector(s)
        d.streamStartNs = streamStartNs
        detector = d
    }

    public func process(_ samples: UnsafeBufferPointer<Float>, emit: (DetectedImpact) -> Void) {
        detector?.process(samples) { c in
            emit(
                DetectedImpact(
                    id: c.id, onsetSample: c.onsetSample, impactSample: c.impactSample, t0Ns: c.t0Ns, score: c.score,
                    features: [
                        "snrDb": c.features.snrDb, "riseBlocks": Double(c.features.riseBlocks),
                        "decayDb": c.features.decayDb, "broadband": c.features.broadband,
                    ],
                    tofCorrectionSamples: c.tofCorrectionSamples, tofProvenance: c.tofProvenance,
                    decidedAtSample: c.decidedAtSample))
        }
    }

    public func skip(samples count: Int64) { detector?.skip(count) }

    public static let factory = PluginFactory(
        PluginDescriptor(
            name: "impact", kind: .detector,
            summary:
                "Sharp, broadband, fast-decaying transients (club on ball), onset to the sample; distractors rejected.",
            parameters: [
                .init(
                    "micToBallMetres", .number, default: .number(0, isInteger: true), minimum: 0, maximum: 100,
                    "Declared mic-to-ball distance for the time-of-flight correction; 0: none declared (no tof_correction)."
                ),
                .init(
                    "triggerDb", .number, default: .number(10, isInteger: true), minimum: 3, maximum: 120,
                    "Energy over the noise floor that opens an event, dB."),
            ]),
        make: { p, config in
            let metres = p.number("micToBallMetres")
            let trigger = p.number("triggerDb")
            let c = config[.speedOfSoundMps]
            // A measured distance (a record from `ppc-tool measure tof`, loaded with --measured) is used when the
            // manifest declares none; an assumed default never is (no correction is better than a guessed one).
            var measured: (Double, String)?
            if case .measured(let r) = config.parameter(.micToBallDefaultMetres).provenance {
                measured = (config[.micToBallDefaultMetres], "measured \(r.date) by \(r.instrument)")
            }
            return ImpactDetectorStage { s in
                s.triggerDb = trigger
                s.speedOfSoundMps = c
                if metres > 0 {
                    s.micToBallMetres = metres
                    s.distanceProvenance =
                        "declared in the manifest: \(metres) m (assumed: a person's value, no survey record)"
                } else if let (m, how) = measured {
                    s.micToBallMetres = m
                    s.distanceProvenance = "detect.micToBallDefaultMetres = \(m) m, \(how)"
                }
            }
        })
}

public struct DetectorStageError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ d: String) { description = d }
}
