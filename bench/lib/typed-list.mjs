// client-node's typed list of every Node, the baseline of the cold-start and memory benchmarks (no imports
// of its own: the informer's process measures client-node alone).
//
// A list of 50,000 heavy Nodes cannot be one answer in Node: its 540 MB of JSON is longer than V8's
// longest string (2^29 - 24 characters), in the fake API server's JSON.stringify and in client-node's
// `.text()` of the answer alike. From TYPED_PAGED_FROM Nodes on, the list pages as client-go's reflector
// does (tools/pager/pager.go defaultPageSize, 500) and keeps every page's items, as an informer's list does.
export const TYPED_PAGED_FROM = 50_000;
export const TYPED_PAGE_SIZE = 500;

/** `api.listNode()` of `n` Nodes: one answer, or pages of TYPED_PAGE_SIZE joined into one V1NodeList. */
export async function typedListNodes(api, n) {
  if (n < TYPED_PAGED_FROM) return api.listNode();
  const items = [];
  let list;
  let cont;
  do {
    list = await api.listNode({ limit: TYPED_PAGE_SIZE, _continue: cont });
    for (const item of list.items) items.push(item);
    cont = list.metadata?._continue || undefined;
  } while (cont);
  list.items = items;
  if (list.metadata) list.metadata._continue = undefined;
  return list;
}
