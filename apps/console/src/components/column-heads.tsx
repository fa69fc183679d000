/** A table's column headings, each a `<th scope="col">`, so screen readers name every cell's column. */
export function ColumnHeads({ columns }: { columns: readonly string[] }) {
  return (
    <thead>
      <tr>
        {columns.map((column) => <th key={column} scope="col">{column}</th>)}
      </tr>
    </thead>
  );
}
