import Foundation
import Pipeline
import Syscall

/// `synthetic.audio`: mono room noise with a swing whoosh before each impact and a sharp broadband impact starting
/// exactly at the impact sample, on the same clock as `synthetic.video`.
///
/// Truth: the impact onset is sample `round((impact − startNs) × sampleRate / 1e9)`.
///
/// `awayAt` plays a microphone pulled out and put back, as a test double for a real card's outage (`ALSASource`): at the
/// first block at or after each time it says the device went away, skips `awaySeconds` of samples (the numbering jumps
/// past them) and says it is back, verified, with the block that follows.
public final class SyntheticAudioSource: AudioSource, InterruptionReporting {
    public var onInterruption: ((SourceInterruption) -> Void)?
    /// First sample of each outage still to come, in order.
    var awaySamples: [Int64]
    let awayLength: Int64
    var outageCount: UInt64 = 0
    public let sampleRate: Int
    public let script: SwingScript
    let startNs: Int64
    let totalSamples: Int64
    let noiseAmplitude: Float
    let impactAmplitude: Float
    let whooshAmplitude: Float
    /// Onset sample of each impact.
    public let impactSamples: [Int64]
    var rng: SplitMix64
    var position: Int64 = 0
    var lowpass: Float = 0
    /// `.realtime`: each block is returned when its last sample would have been heard, as a sound card does.
    let pace: SyntheticVideoSource.Pace
    /// Monotonic time the stream's sample 0 was (set by the first read when paced), ns.
    var paceOriginNs: Int64?

    static let whooshLeadSamplesPerSecond = 0.35
    static let impactDecaySeconds = 0.004

    public init(
        sampleRate: Int, script: SwingScript, startNs: Int64 = 0, seconds: Double, noiseDbfs: Double = -60,
        impactDbfs: Double = -12, whooshDbfs: Double = -36, seed: UInt64 = 1, pace: SyntheticVideoSource.Pace = .asap,
        awayAtSeconds: [Double] = [], awaySeconds: Double = 1
    ) {
        self.pace = pace
        awaySamples = awayAtSeconds.sorted().map { Int64(($0 * Double(sampleRate)).rounded()) }
        awayLength = Int64((awaySeconds * Double(sampleRate)).rounded())
        self.sampleRate = sampleRate
        self.script = script
        self.startNs = startNs
        self.totalSamples = Int64((seconds * Double(sampleRate)).rounded())
        self.noiseAmplitude = Float(pow(10, noiseDbfs / 20))
        self.impactAmplitude = Float(pow(10, impactDbfs / 20))
        self.whooshAmplitude = Float(pow(10, whooshDbfs / 20))
        self.impactSamples = script.impactsNs.map { Self.sample(at: $0 - startNs, rate: sampleRate) }
        self.rng = SplitMix64(seed: seed)
    }

    static func sample(at relNs: Int64, rate: Int) -> Int64 {
        (relNs * Int64(rate) + 500_000_000) / 1_000_000_000
    }

    public func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> AudioBlock? {
        if let away = awaySamples.first, position >= away {
            // The microphone is pulled here and put back `awayLength` samples later: said, skipped, said again.
            awaySamples.removeFirst()
            outageCount += 1
            let gone = startNs + position * 1_000_000_000 / Int64(sampleRate)
            var i = SourceInterruption(
                id: outageCount, startNs: gone, reason: "the synthetic microphone was pulled out (awayAt)")
            onInterruption?(i)
            position += awayLength
            i.endNs = startNs + position * 1_000_000_000 / Int64(sampleRate)
            i.verified = true
            onInterruption?(i)
        }
        guard position < totalSamples else { return nil }
        let n = Int(min(Int64(buffer.count), totalSamples - position))
        let fs = Double(sampleRate)
        let whooshLead = Int64(Self.whooshLeadSamplesPerSecond * fs)
        let decay = Float(Self.impactDecaySeconds * fs)
        for k in 0..<n {
            let s = position + Int64(k)
            var x = noiseAmplitude * rng.signedUnit()
            for onset in impactSamples {
                let d = s - onset
                if d >= -whooshLead && d < 0 {
                    // Whoosh: low-passed noise swelling towards the impact.
                    let phase = Float(d + whooshLead) / Float(whooshLead)
                    lowpass += 0.05 * (rng.signedUnit() - lowpass)
                    x += whooshAmplitude * 4 * lowpass * phase * phase
                } else if d >= 0 && d < Int64(decay * 12) {
                    // Impact: broadband burst with a fast exponential decay, full level at the onset sample.
                    let env = expf(-Float(d) / decay)
                    let sign: Float = d == 0 ? 1 : rng.signedUnit()
                    x += impactAmplitude * env * sign
                }
            }
            buffer[k] = max(-1, min(1, x))
        }
        let block = AudioBlock(
            firstSample: position, count: n,
            timeNs: startNs + position * 1_000_000_000 / Int64(sampleRate))
        position += Int64(n)
        if pace == .realtime {
            let origin = paceOriginNs ?? (monotonicNowNs() - position * 1_000_000_000 / Int64(sampleRate))
            paceOriginNs = origin
            sleepUntilNs(origin + position * 1_000_000_000 / Int64(sampleRate))
        }
        return block
    }
}
