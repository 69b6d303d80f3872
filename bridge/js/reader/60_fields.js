// Module fields: labelled values (dl/dt/dd, table headers and cells, label and value) from the
// structures the walk found.
  const fields = [];
  const add = (label, value) => {
    if (fields.length >= opts.fieldCap) return;
    label = (label || '').replace(/:\s*$/, '').slice(0, 200);
    value = (value || '').slice(0, 2000);
    if (label && value) fields.push({ label, value });
  };
  for (const el of main.structures) {
    if (fields.length >= opts.fieldCap) break;
    const tag = el.localName;
    if (tag === 'dl') {
      let labels = [];
      let lastWasDt = false;
      const items = [];
      for (const c of el.children) {
        if (c.localName === 'div') items.push(...c.children); else items.push(c);
      }
      for (const c of items) {
        if (c.localName === 'dt') {
          if (!lastWasDt) labels = [];
          labels.push(visibleText(c, 300));
          lastWasDt = true;
        } else if (c.localName === 'dd') {
          add(labels.filter(Boolean).join(' / '), visibleText(c));
          lastWasDt = false;
        }
      }
    } else if (tag === 'table') {
      const rows = Array.from(el.rows || []);
      let headers = null;
      const cellsOf = (row) => Array.from(row.cells || []);
      if (rows.length > 1 && cellsOf(rows[0]).length > 0 && cellsOf(rows[0]).every((c) => c.localName === 'th')) {
        headers = [];
        for (const c of cellsOf(rows[0])) for (let i = 0; i < (c.colSpan || 1); i++) headers.push(visibleText(c, 300));
      }
      for (const row of headers ? rows.slice(1) : rows) {
        const cells = cellsOf(row);
        let rowLabel = '';
        let col = 0;
        for (const c of cells) {
          const span = c.colSpan || 1;
          if (c.localName === 'th') {
            rowLabel = visibleText(c, 300);
          } else {
            const colLabel = headers ? (headers[col] || '') : '';
            let label = colLabel;
            if (rowLabel && colLabel && colLabel !== rowLabel && col > 0) label = rowLabel + ' / ' + colLabel;
            else if (!label) label = rowLabel;
            add(label, visibleText(c));
          }
          col += span;
        }
      }
    } else if (tag === 'label') {
      // A label not tied to a form control, followed by its value.
      if (el.control || el.querySelector('input,select,textarea,button')) continue;
      const next = el.nextElementSibling;
      if (next && !/^(input|select|textarea|button|label)$/.test(next.localName)) {
        add(visibleText(el, 300), visibleText(next));
      }
    }
  }

