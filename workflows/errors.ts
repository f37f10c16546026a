/**
 * A node that cannot run at all (unequal input lengths, an index out of range, rows that are
 * not a list): the run fails with a message naming the node (D9), unlike a provider's refusal
 * of one item, which only fails that item.
 */
export class NodeFailure extends Error {
  constructor(
    readonly nodeId: string,
    readonly nodeType: string,
    reason: string,
  ) {
    super(`node '${nodeId}' (${nodeType}): ${reason}`);
    this.name = 'NodeFailure';
  }
}
