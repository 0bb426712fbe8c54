import Foundation

/// Lines meant for the person at the terminal (and scripts), as opposed to the structured log.
enum Terminal {
    /// Writes `text` and a newline to standard output, unbuffered.
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}
