import Foundation

extension Pipe {
    /// Writes `input` into the pipe and closes it, on a thread of its own: a child that answers as
    /// it reads fills its output pipe while the rest of a long input waits to be written, and
    /// neither side would move if the test wrote it first.
    public func writeInBackground(_ input: String) {
        let handle = fileHandleForWriting
        Thread {
            handle.write(Data(input.utf8))
            try? handle.close()
        }.start()
    }
}
