{#- The script both audit forms share (included inside their one <script> element): it saves the page's rows as
    the CSV, each row the data the page was given (`DATA`, `COLS`) then `tail(section)`'s cells, a cell a spreadsheet
    would run as a formula neutralised with a leading ' as in the CSV the command writes. `data` and `columns`
    come from the page's context, as JSON made safe for a <script> element by `tojson`. -#}
const DATA = {{ data|tojson }};
const COLS = {{ columns|tojson }};
function q(v) { v = String(v); if (/^[=+\-@\t\r]/.test(v)) v = "'" + v;
  return /[",\n\r]/.test(v) ? '"' + v.replace(/"/g, '""') + '"' : v; }
document.getElementById('save').onclick = () => {
  const lines = [COLS.join(',')];
  document.querySelectorAll(SECTIONS).forEach((s) => {
    const row = DATA[Number(s.dataset.i)].slice().concat(tail(s));
    lines.push(row.map(q).join(','));
  });
  const who = document.getElementById('annotator').value || 'annotator';
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([lines.join('\n') + '\n'], {type: 'text/csv'}));
  a.download = FILE_PREFIX + who + '.csv';
  a.click();
};
