// Module result: the answer of mode read; the end of the reader's function.
  return {
    url: String(location.href),
    title: (doc.title || '').replace(/\s+/g, ' ').trim().slice(0, 300),
    heading: main.heading || '',
    text,
    links: main.links,
    fields,
    frames: main.frames,
    controls,
    nRuns,
    withheld,
  };
}
