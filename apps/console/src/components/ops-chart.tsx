import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { OpsOverview } from '../api-types.ts';

type History = OpsOverview['history'];

const HEIGHT = 260;

/** x: seconds since the epoch (uPlot's time axis); then lag, writes/s and searches/s. */
const toData = (history: History): uPlot.AlignedData => [
  history.map((h) => Date.parse(h.at) / 1000),
  history.map((h) => h.lag),
  history.map((h) => h.writesPerSecond),
  history.map((h) => h.searchesPerSecond),
];

function options(width: number, container: HTMLElement): uPlot.Options {
  return {
    width,
    height: HEIGHT,
    scales: { x: { time: true }, lag: {}, rate: {} },
    series: [
      {},
      { label: 'lag (messages)', scale: 'lag', stroke: '#b42318', width: 2 },
      { label: 'writes/s', scale: 'rate', stroke: '#1849a9', width: 2 },
      { label: 'searches/s', scale: 'rate', stroke: '#067647', width: 2, dash: [6, 4] },
    ],
    axes: [
      {},
      { scale: 'lag', label: 'lag' },
      { scale: 'rate', label: 'per second', side: 1, grid: { show: false } },
    ],
    // Tests and people wait on the same signal: the chart has drawn this many points.
    hooks: { draw: [(u) => container.setAttribute('data-points', String(u.data[0].length))] },
  };
}

/** Lag and throughput over the overview's history, redrawn in place as new overviews arrive. */
export function OpsChart({ history }: { history: History }) {
  const container = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);

  useEffect(() => {
    const el = container.current;
    if (el === null) return;
    const resize = new ResizeObserver(() => chart.current?.setSize({ width: widthOf(el), height: HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      chart.current?.destroy();
      chart.current = null;
    };
  }, []);

  useEffect(() => {
    const el = container.current;
    if (el === null || history.length === 0) return;
    if (chart.current === null) chart.current = new uPlot(options(widthOf(el), el), toData(history), el);
    else chart.current.setData(toData(history));
  }, [history]);

  return (
    <figure class="chart">
      <div ref={container} data-testid="ops-chart" role="img" aria-label="Consumer lag, writes per second and searches per second over time" />
      <figcaption>
        {history.length === 0 ? 'No history yet.' : `Lag and throughput over the last ${history.length} samples (the tables above hold the current numbers).`}
      </figcaption>
    </figure>
  );
}

const widthOf = (el: HTMLElement): number => Math.max(320, Math.floor(el.clientWidth || 640));
