console.log('top-level 2.4');
