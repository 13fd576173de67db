import Foundation

/// A clip's audio.wav read for its waveform: RIFF/WAVE, PCM 16 or 32 bit or IEEE float 32, the first channel as
/// floats in −1…1. Anything else is refused naming the file and what it holds.
struct WAVSamples {
    let sampleRate: Int
    let samples: [Float]

    struct Refused: Error, CustomStringConvertible {
        let description: String
    }

    init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw Refused(description: "\(path): cannot be read") }
        let b = [UInt8](data)
        func u32(_ o: Int) -> UInt32 { UInt32(b[o]) | UInt32(b[o + 1]) << 8 | UInt32(b[o + 2]) << 16 | UInt32(b[o + 3]) << 24 }
        func u16(_ o: Int) -> UInt16 { UInt16(b[o]) | UInt16(b[o + 1]) << 8 }
        guard b.count >= 12, b[0..<4].elementsEqual("RIFF".utf8), b[8..<12].elementsEqual("WAVE".utf8) else {
            throw Refused(description: "\(path): not a RIFF/WAVE file")
        }
        var o = 12
        var format: (tag: UInt16, channels: Int, rate: Int, bits: Int)?
        var body: Range<Int>?
        while o + 8 <= b.count {
            let id = String(decoding: b[o..<(o + 4)], as: UTF8.self)
            let size = Int(u32(o + 4))
            let start = o + 8
            guard size <= b.count - start else {
                // A data chunk cut short (a writer that died) is read as far as it goes; any other is malformed.
                if id == "data" { body = start..<b.count; break }
                throw Refused(description: "\(path): chunk '\(id)' claims \(size) bytes, \(b.count - start) remain")
            }
            if id == "fmt ", size >= 16 {
                format = (u16(start), Int(u16(start + 2)), Int(u32(start + 4)), Int(u16(start + 14)))
            } else if id == "data" {
                body = start..<(start + size)
            }
            o = start + size + (size & 1)
        }
        guard let f = format else { throw Refused(description: "\(path): no fmt chunk") }
        guard let body else { throw Refused(description: "\(path): no data chunk") }
        guard f.channels > 0, f.rate > 0 else { throw Refused(description: "\(path): \(f.channels) channels at \(f.rate) Hz") }
        let width = f.bits / 8
        let frame = width * f.channels
        guard (f.tag == 1 && (f.bits == 16 || f.bits == 32)) || (f.tag == 3 && f.bits == 32) else {
            throw Refused(description: "\(path): format tag \(f.tag), \(f.bits) bit: the studio reads PCM 16/32 bit and float 32")
        }
        guard frame > 0 else { throw Refused(description: "\(path): \(f.bits) bits a sample") }
        let count = body.count / frame
        var out = [Float](repeating: 0, count: count)
        for i in 0..<count {
            let at = body.lowerBound + i * frame
            if f.tag == 3 {
                let v = Float(bitPattern: u32(at))
                out[i] = v.isFinite ? v : 0
            } else if f.bits == 16 {
                out[i] = Float(Int16(bitPattern: u16(at))) / 32768
            } else {
                out[i] = Float(Int32(bitPattern: u32(at))) / 2_147_483_648
            }
        }
        sampleRate = f.rate
        samples = out
    }
}
