import Testing

@testable import Cepis

/// How the bulk engine takes a chunk's asks off its queue of asks to send.
@Suite("the queue of asks to send")
struct LookupAsksQueueTests {
  @Test(
    "a chunk taken holds its own asks only, and the queue keeps its room",
    // A queue that holds exactly one chunk (the slice is the whole array), and one that holds
    // more.
    arguments: [Client.maxBatch, 3 * Client.maxBatch + 7]
  )
  func chunkIsACopyOfItsOwnSize(queued: Int) throws {
    var queue: [Int32] = []
    // Room grown while asks piled up (chunks in flight all busy), as in a run.
    queue.reserveCapacity(20_000)
    queue.append(contentsOf: (0..<Int32(queued)))
    let room = queue.capacity
    var head = 0
    var taken: [[Int32]] = []
    while let ids = AskQueues.takeChunk(from: &queue, head: &head, partial: true) {
      taken.append(ids)
    }
    // Every ask once, in order, 500 to a chunk.
    #expect(taken.flatMap { $0 } == Array(0..<Int32(queued)))
    #expect(taken.dropLast().allSatisfy { $0.count == Client.maxBatch })
    // Each chunk's buffer is its own and about its size: not the queue's 20,000 (a chunk
    // that kept the queue's buffer would hold 80 KB for 2 KB of asks while in flight).
    #expect(taken.allSatisfy { $0.capacity < 2 * Client.maxBatch })
    // The queue, emptied, keeps its buffer for the next asks.
    #expect(queue.isEmpty && head == 0 && queue.capacity == room)
  }
}
